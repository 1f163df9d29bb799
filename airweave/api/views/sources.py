"""/sources: the catalog of sources and their declared fields."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import SourceSerializer, source_payload
from connectors.registry import all_sources, get_source


class SourceListView(APIView):
    @extend_schema(responses=SourceSerializer(many=True))
    def get(self, request):
        return Response([source_payload(cls) for cls in all_sources()])


class SourceDetailView(APIView):
    @extend_schema(responses=SourceSerializer)
    def get(self, request, short_name):
        try:
            cls = get_source(short_name)
        except KeyError:
            raise NotFound(f"Source '{short_name}' not found") from None
        return Response(source_payload(cls))
