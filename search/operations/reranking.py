"""Reranking: a reranker (Cohere, or a local cross-encoder when on disk) reorders the candidates."""
from __future__ import annotations

from airweave.providers.errors import NoProviderAvailable
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.results import candidate_text
from search.state import SearchState


class Reranking(SearchOperation):
    name = "reranking"
    REQUIRES = ("retrieval",)
    AFTER = ("federated_search",)
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        if not state.candidates:
            ctx.emit("reranking_done", op=self.name, rankings=[], applied=False)
            raise OperationSkipped("nothing to rerank")
        documents = [candidate_text(c)[:4000] for c in state.candidates]
        try:
            ranking, provider = ctx.chains["reranking"].call(
                lambda reranker, spec: reranker.rerank(state.query, documents, top_n=len(documents)))
        except NoProviderAvailable as exc:
            ctx.emit("reranking_done", op=self.name, rankings=[], applied=False)
            raise OperationSkipped(f"no reranker available: {exc}") from None
        ranked = [state.candidates[i].model_copy(update={"score": score}) for i, score in ranking
                  if 0 <= i < len(state.candidates)]
        placed = {i for i, _ in ranking}
        ranked.extend(c for i, c in enumerate(state.candidates) if i not in placed)
        state.candidates = ranked
        state.provider_used[self.name] = provider
        ctx.emit("reranking_done", op=self.name, applied=True,
                 rankings=[{"index": i, "relevance_score": round(s, 6)} for i, s in ranking[:50]])
