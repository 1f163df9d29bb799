"""Shapes of search results: v2 SearchResult (tiers) and the pipeline endpoint's result (docs/api.md)."""
from __future__ import annotations

from dataclasses import dataclass, fields

from airweave.collections.models import Chunk
from search.state import Candidate


@dataclass(frozen=True)
class EntityView:
    web_url: str
    url: str
    raw_source_fields: dict


@dataclass(frozen=True)
class ChunkView:
    """The fields of a chunk (and its entity) that results show; duck-types a Chunk for rendering."""

    id: object
    entity_id: object
    chunk_index: int
    text: str
    original_entity_id: str
    name: str
    entity_type: str
    source_name: str
    breadcrumbs: list
    created_at: object
    updated_at: object
    sync_id: object
    sync_job_id: object
    access_viewers: list
    access_is_public: bool
    entity: EntityView

    @property
    def public_id(self) -> str:
        return f"{self.original_entity_id}__chunk_{self.chunk_index}"


_VIEW_FIELDS = [f.name for f in fields(ChunkView) if f.name != "entity"]
_ENTITY_FIELDS = ["entity__web_url", "entity__url", "entity__raw_source_fields"]


def load_chunks(chunk_ids) -> dict:
    """{chunk id: ChunkView} for rendering results, in one query.

    Plain rows, not model instances, and never the vector: building 100 Chunk models (vectors
    deferred) took ~24 ms against ~10 ms for the rows, on SciFact.
    """
    rows = Chunk.objects.filter(id__in=list(chunk_ids)).values_list(*_VIEW_FIELDS, *_ENTITY_FIELDS)
    views = {}
    for row in rows:
        n = len(_VIEW_FIELDS)
        views[row[0]] = ChunkView(*row[:n], entity=EntityView(row[n] or "", row[n + 1] or "", row[n + 2] or {}))
    return views


def _iso(value):
    return value.isoformat() if value else None


def v2_result(chunk: "Chunk | ChunkView", score: float) -> dict:
    """A v2 SearchResult for one chunk (a Chunk with its entity, or a ChunkView)."""
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


def federated_result(raw: dict, *, source_name: str, access: dict) -> dict:
    """A federated source's result (`BaseSource.search`: at least entity_id, name,
    textual_representation) in the pipeline endpoint's result shape, with every field present.

    `id` is None (no chunk row stands behind it); `source_name` fills `system_metadata.source_name`
    when the source left it out; `access` is the normalised `{viewers, is_public}`. Fields that
    clients require as strings or integers are never null (Airweave's SDK drops a whole response
    over one null): `entity_type` defaults to "FederatedResult", `chunk_index` to 0 (the result
    is one piece), and each breadcrumb has string `entity_id`, `name` and `entity_type`.
    """
    meta = raw.get("system_metadata") if isinstance(raw.get("system_metadata"), dict) else {}
    entity_id = str(raw.get("entity_id", ""))
    chunk_index = meta.get("chunk_index")
    crumbs = [{"entity_id": str(b.get("entity_id") or ""), "name": str(b.get("name") or ""),
               "entity_type": str(b.get("entity_type") or "")}
              for b in (raw.get("breadcrumbs") if isinstance(raw.get("breadcrumbs"), list) else []) if isinstance(b, dict)]
    return {
        "id": None,
        "score": 0.0,
        "entity_id": entity_id,
        "name": str(raw.get("name") or ""),
        "textual_representation": str(raw.get("textual_representation") or ""),
        "created_at": _iso(raw["created_at"]) if hasattr(raw.get("created_at"), "isoformat") else raw.get("created_at"),
        "updated_at": _iso(raw["updated_at"]) if hasattr(raw.get("updated_at"), "isoformat") else raw.get("updated_at"),
        "breadcrumbs": crumbs,
        "system_metadata": {"entity_type": str(meta.get("entity_type") or "FederatedResult"),
                            "source_name": meta.get("source_name") or source_name,
                            "sync_id": None, "sync_job_id": None,
                            "original_entity_id": str(meta.get("original_entity_id") or entity_id),
                            "chunk_index": chunk_index if isinstance(chunk_index, int) and not isinstance(chunk_index, bool)
                            else 0},
        "access": access,
        "source_fields": raw.get("source_fields") if isinstance(raw.get("source_fields"), dict) else {},
        "web_url": str(raw.get("web_url") or ""),
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
    """A v2 SearchResult for a pipeline candidate (a federated one renamed from the pipeline shape)."""
    if candidate.federated is not None:
        f = candidate.federated
        return {"entity_id": f["entity_id"], "name": f["name"], "relevance_score": candidate.score,
                "breadcrumbs": f["breadcrumbs"], "created_at": f["created_at"], "updated_at": f["updated_at"],
                "textual_representation": f["textual_representation"], "airweave_system_metadata": f["system_metadata"],
                "access": f["access"], "web_url": f["web_url"], "url": None, "raw_source_fields": f["source_fields"]}
    return v2_result(candidate.chunk, candidate.score)
