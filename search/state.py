"""The typed state that the search operations read and write (pydantic)."""
from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from search.filters import SQLCondition


class Candidate(BaseModel):
    """A ranked chunk: its row id, its entity row id, its score and, once hydrated, the chunk row."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    chunk_id: Any
    entity_pk: Any
    score: float
    chunk: Any = None  # airweave.collections.models.Chunk once loaded
    federated: dict | None = None  # a result from a federated source (no chunk row)
    leg_ranks: dict | None = None  # hybrid: the rank the vector and keyword legs gave it (see retrieval.Hit)


class SearchState(BaseModel):
    """Everything one search knows: the request (fixed), then what each operation adds.

    Times in `operation_metrics` are milliseconds. `provider_used` maps an operation name to
    the provider that answered it; `skipped` maps an operation name to the reason it did nothing.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    request_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    tier: str = "pipeline"  # who asked: pipeline, classic, agentic, ui (metrics and span labels)
    # request
    query: str
    retrieval_strategy: str = "hybrid"
    limit: int = 100
    offset: int = 0
    collection_id: Any
    readable_id: str = ""
    organization_id: Any = None
    dims: int
    embedding_model: str
    principals: list[str] | None = None
    user_filter: Any = None  # search.filters.Node parsed from the request
    source_connection_ids: list[Any] | None = None
    collapse_entities: bool = False
    recency_weight: float = 0.0
    rrf_k: int = 60
    # filled by operations
    alternatives: list[str] = Field(default_factory=list)
    interpreted_filter: Any = None
    interpretation_confidence: float | None = None
    access_condition: SQLCondition | None = None
    condition: SQLCondition = Field(default_factory=SQLCondition.true)
    query_vectors: list[list[float]] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    completion: str | None = None
    operation_metrics: dict[str, float] = Field(default_factory=dict)
    provider_used: dict[str, str] = Field(default_factory=dict)
    skipped: dict[str, str] = Field(default_factory=dict)
    overfetch: int = 1

    def all_queries(self) -> list[str]:
        """The original query followed by its expansions."""
        return [self.query, *self.alternatives]
