"""/collections: list, count, create, get, update, delete."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import CollectionCreateSerializer, CollectionSerializer, CollectionUpdateSerializer
from airweave.api.views.params import int_param, str_param
from airweave.collections import selectors, services
from airweave.tenancy.context import acting_user


class CollectionListView(APIView):
    @extend_schema(parameters=[OpenApiParameter("skip", int), OpenApiParameter("limit", int), OpenApiParameter("search", str)],
                   responses=CollectionSerializer(many=True))
    def get(self, request):
        collections = selectors.collection_list(
            organization=request.organization, skip=int_param(request, "skip", 0, minimum=0),
            limit=int_param(request, "limit", 100, minimum=1, maximum=1000), search=str_param(request, "search"),
        )
        return Response(CollectionSerializer(collections, many=True).data)

    @extend_schema(request=CollectionCreateSerializer, responses={201: CollectionSerializer})
    def post(self, request):
        data = CollectionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        collection = services.collection_create(
            organization=request.organization, created_by=_user(request), **data.validated_data,
        )
        collection = selectors.collection_get(organization=request.organization, readable_id=collection.readable_id)
        return Response(CollectionSerializer(collection).data, status=201)


class CollectionCountView(APIView):
    @extend_schema(responses=int)
    def get(self, request):
        return Response(selectors.collection_count(organization=request.organization))


class CollectionDetailView(APIView):
    @extend_schema(responses=CollectionSerializer)
    def get(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        return Response(CollectionSerializer(collection).data)

    @extend_schema(request=CollectionUpdateSerializer, responses=CollectionSerializer)
    def patch(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        data = CollectionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.collection_update(collection=collection, modified_by=_user(request), **data.validated_data)
        return Response(CollectionSerializer(collection).data)

    @extend_schema(responses={200: CollectionSerializer})
    def delete(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        payload = CollectionSerializer(collection).data
        services.collection_delete(collection=collection)
        return Response(payload)


def _user(request):
    """The acting user for created_by/modified_by (see airweave.tenancy.context.acting_user)."""
    return acting_user(request.user)
