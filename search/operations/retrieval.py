"""Retrieval: each query (original and expansions) retrieved with the strategy, fused by RRF, hydrated."""
from __future__ import annotations

from search.operations.base import Context, SearchOperation
from search.results import load_chunks
from search.retrieval import RetrievalQuery, read_snapshot, retrieve, rrf_fuse
from search.state import Candidate, SearchState


class Retrieval(SearchOperation):
    name = "retrieval"
    REQUIRES = ("user_filter",)
    AFTER = ("embed_query",)

    def execute(self, state: SearchState, ctx: Context) -> None:
        needed = (state.offset + state.limit) * state.overfetch
        if state.retrieval_strategy == "keyword":
            pairs = [(text, None) for text in state.all_queries()]
        else:
            pairs = list(zip(state.all_queries(), state.query_vectors))
        legs = []
        with read_snapshot(state.collection_id):  # every query's legs and the hydration see one state of the index
            for text, vector in pairs:
                legs.append(retrieve(RetrievalQuery(
                    collection_id=state.collection_id, dims=state.dims, text=text, query_vector=vector,
                    strategy=state.retrieval_strategy, condition=state.condition, limit=needed, offset=0,
                    collapse=state.collapse_entities, rrf_k=state.rrf_k)))
            hits = legs[0] if len(legs) == 1 else rrf_fuse(legs, k=state.rrf_k, by_entity=state.collapse_entities)
            hits = hits[:needed]
            chunks = load_chunks(h.chunk_id for h in hits)
        state.candidates = [Candidate(chunk_id=h.chunk_id, entity_pk=h.entity_pk, score=h.score, chunk=chunks[h.chunk_id],
                                      leg_ranks=h.ranks)
                            for h in hits if h.chunk_id in chunks]
        ctx.emit("vector_search_done", op=self.name, final_count=len(state.candidates),
                 top_scores=[round(c.score, 6) for c in state.candidates[:5]])
