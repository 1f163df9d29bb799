"""Recency: blends relevance with freshness, score' = (1 − w)·score/max + w·0.5^(age/half-life).

It runs after reranking (when reranking runs), so it blends the final relevance scores: before
it, a reranker's own scores would replace the blend and erase the weight. A reranker may score
below zero (a cross-encoder's logits): scores are then shifted to start at 0 before dividing.
"""
from __future__ import annotations

from django.utils import timezone

from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState


class Recency(SearchOperation):
    name = "recency"
    REQUIRES = ("retrieval",)
    AFTER = ("federated_search", "reranking")

    def execute(self, state: SearchState, ctx: Context) -> None:
        weight = state.recency_weight
        if weight <= 0 or not state.candidates:
            raise OperationSkipped("recency weight is 0")
        half_life = float(self.options.get("half_life_days", 90))
        now = timezone.now()
        low = min(0.0, min(c.score for c in state.candidates))
        top = (max(c.score for c in state.candidates) - low) or 1.0
        for cand in state.candidates:
            updated = cand.chunk.updated_at if cand.chunk is not None else None
            freshness = 0.5 ** (max((now - updated).total_seconds(), 0) / 86400 / half_life) if updated else 0.0
            cand.score = (1 - weight) * (cand.score - low) / top + weight * freshness
        state.candidates.sort(key=lambda c: -c.score)
