"""Search endpoints: instant (v2 tier) and the pipeline endpoint, as JSON or as Server-Sent Events.

Every endpoint passes the caller's principals (airweave.api.permissions.request_principals):
a caller acting as a user sees only what that user may see, on every tier and in every stream.
"""
from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import (
    AgenticSearchRequestSerializer, ClassicSearchRequestSerializer, InstantSearchRequestSerializer, PipelineSearchRequestSerializer, PipelineSearchResponseSerializer,
    SearchResponseSerializer,
)
from airweave.api.permissions import request_principals
from airweave.collections import selectors
from search.agentic import search_agentic
from search.filters import parse_filter_groups
from search.instant import InstantSearchRequest, search_instant
from search.pipeline import PipelineRequest, search_classic, search_prepare, search_run
from search.streams import sse, stream_from_thread


class ClassicSearchView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    @extend_schema(request=ClassicSearchRequestSerializer, responses=SearchResponseSerializer)
    def post(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        data = ClassicSearchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        result = search_classic(collection=collection, query=v["query"], filter_groups=v.get("filter"),
                                limit=v["limit"], offset=v["offset"], principals=request_principals(request))
        return Response({"results": result.results})


class InstantSearchView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    @extend_schema(request=InstantSearchRequestSerializer, responses=SearchResponseSerializer)
    def post(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        data = InstantSearchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        response = search_instant(collection=collection, request=InstantSearchRequest(**data.validated_data),
                                  principals=request_principals(request))
        return Response({"results": response.results})


def _prepare(request, readable_id):
    collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
    data = PipelineSearchRequestSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    return search_prepare(collection=collection, request=PipelineRequest(**data.validated_data),
                          principals=request_principals(request))


class PipelineSearchView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    @extend_schema(request=PipelineSearchRequestSerializer, responses=PipelineSearchResponseSerializer)
    def post(self, request, readable_id):
        result = search_run(_prepare(request, readable_id))
        return Response({"results": result.results, "completion": result.completion})


class EventStreamRenderer(BaseRenderer):
    """Lets clients ask for `Accept: text/event-stream`; the view streams the frames itself."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, (bytes, str)):
            return data
        return JSONRenderer().render(data)  # an error answered before streaming began


class PipelineSearchStreamView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(request=PipelineSearchRequestSerializer, responses={(200, "text/event-stream"): str})
    def post(self, request, readable_id):
        prepared = _prepare(request, readable_id)
        events = stream_from_thread(lambda stream: search_run(prepared, stream), first={"type": "connected"})
        response = StreamingHttpResponse(sse(events), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


def _agentic_args(request, readable_id) -> dict:
    collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
    data = AgenticSearchRequestSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    v = data.validated_data
    parse_filter_groups(v.get("filter"))  # a bad filter answers 422 before any streaming
    return {"collection": collection, "query": v["query"], "filter_groups": v.get("filter"), "limit": v["limit"],
            "thinking": v["thinking"], "principals": request_principals(request)}


class AgenticSearchView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    @extend_schema(request=AgenticSearchRequestSerializer, responses=SearchResponseSerializer)
    def post(self, request, readable_id):
        return Response({"results": search_agentic(**_agentic_args(request, readable_id)).results})


class AgenticSearchStreamView(APIView):
    throttle_scope = "search"  # AIRWEAVE_SEARCH_RATE_LIMIT applies too
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(request=AgenticSearchRequestSerializer, responses={(200, "text/event-stream"): str})
    def post(self, request, readable_id):
        args = _agentic_args(request, readable_id)
        events = stream_from_thread(lambda stream: search_agentic(**args, stream=stream), first={"type": "connected"})
        response = StreamingHttpResponse(sse(events), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        return response
