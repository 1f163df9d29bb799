"""FederatedSearch: asks sources that search at query time (declared `federated_search`) and merges by RRF.

Federated results obey the same access rule as synced chunks: results the caller may not see are
dropped before merging, so they reach neither results, counts, answers nor events.
"""
from __future__ import annotations

import logging

from airweave.collections.access import is_visible, normalize_access
from airweave.collections.models import SourceConnection
from connectors.registry import get_source, source_for_connection
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import Candidate, SearchState

logger = logging.getLogger(__name__)


class FederatedSearch(SearchOperation):
    name = "federated_search"
    AFTER = ("retrieval",)
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        connections = [c for c in SourceConnection.objects.filter(collection_id=state.collection_id)
                       if _is_federated(c.short_name, c.config)
                       and (not state.source_connection_ids or c.id in set(state.source_connection_ids))]
        if not connections:
            raise OperationSkipped("no federated sources in this collection")
        lists, failures = [], {}
        for connection in connections:
            source_cls = get_source(connection.short_name)
            source = source_for_connection(connection)
            try:
                results = source.search(state.query, limit=state.offset + state.limit)
            except Exception as exc:  # a failing federated source gives partial results, not a failed search
                logger.warning("federated search of %s failed", connection.short_name, exc_info=True)
                failures[connection.short_name] = str(exc)
                continue
            finally:
                source.close()
            lists.append(_visible(results, source_cls, connection.id, state.principals))
        k = state.rrf_k
        scores: dict[str, float] = {}
        for rank, cand in enumerate(state.candidates, start=1):
            scores[f"chunk:{cand.chunk_id}"] = 1 / (k + rank)
        merged = {f"chunk:{c.chunk_id}": c for c in state.candidates}
        for results in lists:
            for rank, result in enumerate(results, start=1):
                key = f"fed:{result['entity_id']}"
                scores[key] = scores.get(key, 0) + 1 / (k + rank)
                merged.setdefault(key, Candidate(chunk_id=None, entity_pk=None, score=0.0, federated=result))
        state.candidates = [merged[key].model_copy(update={"score": scores[key]})
                            for key in sorted(scores, key=lambda key: -scores[key])]
        ctx.emit("federated_search_done", op=self.name, sources=[c.short_name for c in connections],
                 failures=failures, count=sum(len(r) for r in lists))


def _visible(results: list[dict], source_cls, connection_id, principals: list[str] | None) -> list[dict]:
    """The results the caller may see, their `access` normalised as a synced entity's would be.

    A result of a source that declares `supports_access_control` without an access list is
    closed; other sources' results are visible to the organization.
    """
    out = []
    for result in results:
        access = result.get("access") if isinstance(result.get("access"), dict) else {}
        viewers, is_public = normalize_access(
            supports_access_control=bool(source_cls.supports_access_control), source_connection_id=connection_id,
            viewers=access.get("viewers"), is_public=access.get("is_public"))
        if is_visible(principals, viewers, is_public):
            out.append({**result, "access": {"is_public": is_public, "viewers": viewers}})
    return out


def _is_federated(short_name: str, config: dict | None) -> bool:
    try:
        return get_source(short_name).federates(config or {})
    except KeyError:
        return False
