"""FederatedSearch: asks sources that search at query time (declared `federated_search`) and merges by RRF.

A source that fails is left out (partial results); `federated_search_done` says so in `failures`
(`{short_name: error}`) and, per connection (several may share a source), in `failed_connections`
(`[{source_connection_id, short_name, name, error}]`).

Federated results obey the same access rule as synced chunks: results the caller may not see are
dropped before merging, so they reach neither results, counts, answers nor events.
"""
from __future__ import annotations

import logging

from airweave.collections.access import is_visible, normalize_access
from airweave.collections.models import SourceConnection
from connectors.registry import get_source, source_for_connection
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.results import federated_result
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
        lists, failures = [], []
        for connection in connections:
            source_cls = get_source(connection.short_name)
            source = source_for_connection(connection)
            try:
                results = source.search(state.query, limit=state.offset + state.limit)
            except Exception as exc:  # a failing federated source gives partial results, not a failed search
                logger.warning("federated search of %s failed", connection.short_name, exc_info=True)
                failures.append({"source_connection_id": str(connection.id), "short_name": connection.short_name,
                                 "name": connection.name, "error": str(exc)})
                continue
            finally:
                source.close()
            lists.append([(connection.id, r) for r in _visible(results, source_cls, connection, state.principals)])
        k = state.rrf_k
        scores: dict[str, float] = {}
        for rank, cand in enumerate(state.candidates, start=1):
            scores[f"chunk:{cand.chunk_id}"] = 1 / (k + rank)
        merged = {f"chunk:{c.chunk_id}": c for c in state.candidates}
        for results in lists:
            for rank, (connection_id, result) in enumerate(results, start=1):
                key = f"fed:{connection_id}:{result['entity_id']}"  # two sources may use the same ids
                scores[key] = scores.get(key, 0) + 1 / (k + rank)
                merged.setdefault(key, Candidate(chunk_id=None, entity_pk=None, score=0.0, federated=result))
        state.candidates = [merged[key].model_copy(update={"score": scores[key]})
                            for key in sorted(scores, key=lambda key: -scores[key])]
        ctx.emit("federated_search_done", op=self.name, sources=[c.short_name for c in connections],
                 failures={f["short_name"]: f["error"] for f in failures}, failed_connections=failures,
                 count=sum(len(r) for r in lists))


def _visible(results: list[dict], source_cls, connection, principals: list[str] | None) -> list[dict]:
    """The results the caller may see, in the pipeline result shape (search.results.federated_result),
    their `access` normalised as a synced entity's would be.

    A result of a source that declares `supports_access_control` without an access list is
    closed; other sources' results are visible to the organization.
    """
    out = []
    for result in results:
        if not isinstance(result, dict) or result.get("entity_id") in (None, ""):
            continue  # not a result a client could use or cite
        access = result.get("access") if isinstance(result.get("access"), dict) else {}
        viewers, is_public = normalize_access(
            supports_access_control=bool(source_cls.supports_access_control), source_connection_id=connection.id,
            viewers=access.get("viewers"), is_public=access.get("is_public"))
        if is_visible(principals, viewers, is_public):
            out.append(federated_result(result, source_name=connection.short_name,
                                        access={"is_public": is_public, "viewers": viewers}))
    return out


def _is_federated(short_name: str, config: dict | None) -> bool:
    try:
        return get_source(short_name).federates(config or {})
    except KeyError:
        return False
