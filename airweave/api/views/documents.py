"""POST /collections/{readable_id}/documents: the push API (batch upsert and delete by id)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import PushRequestSerializer, SourceConnectionJobSerializer
from airweave.api.views.collections import _user
from airweave.collections import selectors
from connectors.selectors import sync_job_detail
from connectors.sync.push import PushDocument, documents_push


class DocumentPushView(APIView):
    @extend_schema(request=PushRequestSerializer, responses=SourceConnectionJobSerializer,
                   description="Upsert documents by id and delete ids, through the same hashing and "
                               "update rules as any sync. Answers the push's sync job with its counts.")
    def post(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        data = PushRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        documents = [
            PushDocument(id=d["id"], text=d["text"], name=d.get("name") or "", breadcrumbs=d.get("breadcrumbs") or [],
                         created_at=d.get("created_at"), updated_at=d.get("updated_at"), web_url=d.get("web_url") or "",
                         url=d.get("url") or "", metadata=d.get("metadata") or {},
                         viewers=(d.get("access") or {}).get("viewers") or [],
                         is_public=(d.get("access") or {}).get("is_public", True))
            for d in v["documents"]
        ]
        job = documents_push(collection=collection, documents=documents, delete_ids=v["delete_ids"],
                             created_by=_user(request))
        return Response(SourceConnectionJobSerializer(sync_job_detail(job)).data)
