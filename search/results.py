"""Shapes of search results: v2 SearchResult (tiers) and the pipeline endpoint's result (API.md)."""
from __future__ import annotations

from airweave.collections.models import Chunk
from search.state import Candidate


def _iso(value):
    return value.isoformat() if value else None


def v2_result(chunk: Chunk, score: float) -> dict:
    """A v2 SearchResult for one chunk (its entity loaded)."""
    entity = chunk.entity
    return {
        "entity_id": chunk.public_id,
        "name": chunk.name,
        "relevance_score": score,
        "breadcrumbs": chunk.breadcrumbs,
        "created_at": _iso(chunk.created_at),
        "updated_at": _iso(chunk.updated_at),
        "textual_representation": chunk.text,
        "airweave_system_metadata": {
            "source_name": chunk.source_name,
            "entity_type": chunk.entity_type,
            "sync_id": str(chunk.sync_id) if chunk.sync_id else None,
            "sync_job_id": str(chunk.sync_job_id) if chunk.sync_job_id else None,
            "chunk_index": chunk.chunk_index,
            "original_entity_id": chunk.original_entity_id,
        },
        "access": {"viewers": chunk.access_viewers, "is_public": chunk.access_is_public},
        "web_url": entity.web_url,
        "url": entity.url or None,
        "raw_source_fields": entity.raw_source_fields,
    }


def pipeline_result(candidate: Candidate) -> dict:
    """A result of POST /collections/{id}/search: {id, score, entity_id, ..., system_metadata, source_fields}."""
    if candidate.federated is not None:
        return {**candidate.federated, "score": candidate.score}
    chunk = candidate.chunk
    v2 = v2_result(chunk, candidate.score)
    return {
        "id": str(chunk.id),
        "score": candidate.score,
        "entity_id": v2["entity_id"],
        "name": v2["name"],
        "textual_representation": v2["textual_representation"],
        "created_at": v2["created_at"],
        "updated_at": v2["updated_at"],
        "breadcrumbs": v2["breadcrumbs"],
        "system_metadata": v2["airweave_system_metadata"],
        "access": {"is_public": chunk.access_is_public, "viewers": chunk.access_viewers},
        "source_fields": v2["raw_source_fields"],
        "web_url": v2["web_url"],
    }


def candidate_text(candidate: Candidate) -> str:
    """The text a reranker or an answer reads for a candidate."""
    if candidate.federated is not None:
        return candidate.federated.get("textual_representation") or candidate.federated.get("name", "")
    return candidate.chunk.text


def v2_candidate(candidate: Candidate) -> dict:
    """A v2 SearchResult for a pipeline candidate (federated results keep their own shape)."""
    if candidate.federated is not None:
        return {**candidate.federated, "relevance_score": candidate.score}
    return v2_result(candidate.chunk, candidate.score)
