"""/source-connections: create, list, get, update, delete, run, jobs, cancel."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import (
    SourceConnectionCreateSerializer, SourceConnectionJobSerializer, SourceConnectionUpdateSerializer,
    job_payload, source_connection_list_item, source_connection_payload,
)
from airweave.api.views.collections import _user
from airweave.api.views.params import bool_param, int_param, str_param
from airweave.api.permissions import request_principals
from airweave.collections import selectors
from connectors import services
from connectors.sync.services import sync_job_cancel, sync_job_start

SourceConnectionSchema = inline_serializer("SourceConnection", {"id": drf_serializers.UUIDField(),
                                                                "name": drf_serializers.CharField(),
                                                                "short_name": drf_serializers.CharField()})


def _detail(connection, request):
    return source_connection_payload(connection, selectors.sync_job_list(source_connection=connection),
                                     principals=request_principals(request))


class SourceConnectionListView(APIView):
    @extend_schema(operation_id="source_connections_list",
                   parameters=[OpenApiParameter("collection", str), OpenApiParameter("skip", int),
                               OpenApiParameter("limit", int)], responses=SourceConnectionSchema)
    def get(self, request):
        connections = selectors.source_connection_list(
            organization=request.organization, collection_readable_id=str_param(request, "collection") or None,
            skip=int_param(request, "skip", 0, minimum=0), limit=int_param(request, "limit", 100, minimum=1, maximum=1000),
            principals=request_principals(request),
        )
        return Response([source_connection_list_item(c) for c in connections])

    @extend_schema(request=SourceConnectionCreateSerializer, responses={201: SourceConnectionSchema})
    def post(self, request):
        data = SourceConnectionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = selectors.collection_get(organization=request.organization, readable_id=v["readable_collection_id"])
        schedule = v.get("schedule") or {}
        connection = services.source_connection_create(
            collection=collection, short_name=v["short_name"], name=v.get("name"), description=v.get("description") or "",
            config=v.get("config") or {}, credentials=(v.get("authentication") or {}).get("credentials"),
            cron_schedule=schedule.get("cron") or "", sync_immediately=v["sync_immediately"], created_by=_user(request),
        )
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=connection.id), request),
                        status=201)


class SourceConnectionDetailView(APIView):
    @extend_schema(responses=SourceConnectionSchema)
    def get(self, request, id):
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=id), request))

    @extend_schema(request=SourceConnectionUpdateSerializer, responses=SourceConnectionSchema)
    def patch(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        data = SourceConnectionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.source_connection_update(source_connection=connection, modified_by=_user(request), **data.validated_data)
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=id), request))

    @extend_schema(responses=SourceConnectionSchema)
    def delete(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        payload = _detail(connection, request)
        services.source_connection_delete(source_connection=connection)
        return Response(payload)


class SourceConnectionRunView(APIView):
    @extend_schema(parameters=[OpenApiParameter("force_full_sync", bool)], request=None,
                   responses=SourceConnectionJobSerializer)
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        job = sync_job_start(source_connection=connection, force_full_sync=bool_param(request, "force_full_sync"))
        return Response(SourceConnectionJobSerializer(job_payload(job)).data)


class SourceConnectionJobsView(APIView):
    @extend_schema(parameters=[OpenApiParameter("limit", int)], responses=SourceConnectionJobSerializer(many=True))
    def get(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        jobs = selectors.sync_job_list(source_connection=connection, limit=int_param(request, "limit", 100, minimum=1, maximum=1000))
        return Response(SourceConnectionJobSerializer([job_payload(j) for j in jobs], many=True).data)


class SourceConnectionJobCancelView(APIView):
    @extend_schema(request=None, responses=SourceConnectionJobSerializer)
    def post(self, request, id, job_id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        job = selectors.sync_job_get(organization=request.organization, id=job_id, source_connection=connection)
        return Response(SourceConnectionJobSerializer(job_payload(sync_job_cancel(job=job))).data)
