"""Websocket transport of the search pipeline: `ws/collections/<readable_id>/search/`.

Each JSON message is a pipeline search request (the body of POST /collections/{id}/search);
the socket receives the same events as the SSE stream, then stays open for the next request.
"""
from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from airweave.collections.models import Collection
from search.filters import FilterError
from search.instant import SearchRequestError
from search.pipeline import PipelineRequest, search_prepare, search_run
from search.streams import stream_from_thread

REQUEST_FIELDS = {"query", "retrieval_strategy", "filter", "offset", "limit", "source_connection_ids", "expand_query",
                  "interpret_filters", "rerank", "generate_answer", "recency_weight"}


class SearchConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        organization = self.scope.get("organization")
        if organization is None:
            await self.close(code=4401)
            return
        self.collection = await database_sync_to_async(
            Collection.objects.filter(organization=organization, readable_id=self.scope["url_route"]["kwargs"]["readable_id"]).first)()
        if self.collection is None:
            await self.close(code=4404)
            return
        await self.accept()

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict) or set(content) - REQUEST_FIELDS or "query" not in content:
            await self.send_json({"type": "error", "message": f"send a JSON object with 'query' and any of: "
                                                              f"{', '.join(sorted(REQUEST_FIELDS - {'query'}))}"})
            return
        try:
            prepared = await database_sync_to_async(search_prepare)(
                collection=self.collection, request=PipelineRequest(**content), principals=None)
        except (SearchRequestError, FilterError, TypeError, ValueError) as exc:
            await self.send_json({"type": "error", "message": str(exc)})
            return
        async for event in stream_from_thread(lambda stream: search_run(prepared, stream), first={"type": "connected"}):
            await self.send_json(event)
