"""GET /sync/job/{job_id}/subscribe and /subscribe-state: Server-Sent Events of a sync job's progress."""
from __future__ import annotations

from asgiref.sync import async_to_sync
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from airweave.api.sync_events import job_events, job_snapshot, job_state_events
from airweave.api.views.search import EventStreamRenderer
from search.streams import sse


class SyncJobSubscribeView(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(responses={(200, "text/event-stream"): str})
    def get(self, request, job_id):
        if async_to_sync(job_snapshot)(request.organization, str(job_id)) is None:
            raise NotFound("Sync job not found")
        response = StreamingHttpResponse(sse(job_events(request.organization, str(job_id))),
                                         content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


class SyncJobSubscribeStateView(APIView):
    """The job's entity totals as `entity_state` events, then `sync_complete` (Airweave's subscribe-state)."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(responses={(200, "text/event-stream"): str})
    def get(self, request, job_id):
        if async_to_sync(job_snapshot)(request.organization, str(job_id)) is None:
            raise NotFound("Sync job not found")
        response = StreamingHttpResponse(sse(job_state_events(request.organization, str(job_id))),
                                         content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response
