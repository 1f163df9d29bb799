"""EmbedQuery: embeds the query and its expansions with the collection's pinned model."""
from __future__ import annotations

import time

from airweave.observability.metrics import EMBEDDING_BATCH_SECONDS
from airweave.providers.embeddings import get_embedder
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState


class EmbedQuery(SearchOperation):
    name = "embed_query"
    AFTER = ("search_plan", "query_expansion")

    def execute(self, state: SearchState, ctx: Context) -> None:
        if state.retrieval_strategy == "keyword":
            raise OperationSkipped("the keyword strategy needs no query vector")
        started = time.perf_counter()
        vectors = get_embedder(state.embedding_model).embed_queries(state.all_queries())
        EMBEDDING_BATCH_SECONDS.labels(state.embedding_model, "query").observe(time.perf_counter() - started)
        state.query_vectors = [v.tolist() for v in vectors]
        state.provider_used[self.name] = state.embedding_model
        ctx.emit("embedding_done", op=self.name, count=len(state.query_vectors), dimensions=state.dims)
