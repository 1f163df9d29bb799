"""POST /collections/{readable_id}/search/instant."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import InstantSearchRequestSerializer, SearchResponseSerializer
from airweave.collections import selectors
from search.instant import InstantSearchRequest, search_instant


class InstantSearchView(APIView):
    @extend_schema(request=InstantSearchRequestSerializer, responses=SearchResponseSerializer)
    def post(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        data = InstantSearchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        response = search_instant(collection=collection, request=InstantSearchRequest(**data.validated_data))
        return Response({"results": response.results})
