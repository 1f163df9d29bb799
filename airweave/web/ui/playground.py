"""The search playground's request: parsed from the page's form or the JSON its script posts, run
through the same search services as the REST API (search.pipeline, search.agentic).

Tiers are presets of one engine (docs/architecture.md, The search data flow): instant = no
language-model step; classic = the search plan and reranking; pipeline = every flag as chosen; agentic = the tool loop.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from search.instant import SearchRequestError
from search.results import pipeline_result, v2_candidate

TIERS = ("instant", "classic", "agentic", "pipeline")
STRATEGIES = ("hybrid", "semantic", "keyword")
FLAGS = ("expand_query", "interpret_filters", "rerank", "generate_answer")


@dataclass
class PlaygroundRequest:
    """What the playground asks: the tier, the query, the strategy, the pipeline flags, the limit,
    the filter (v2 filter groups, or a Qdrant-style object on the pipeline tier) and, for admins,
    the membership id of the member to search as."""

    query: str
    tier: str = "pipeline"
    retrieval_strategy: str = "hybrid"
    limit: int = 10
    flags: dict = field(default_factory=dict)
    filter: list | dict | None = None
    as_member: str | None = None

    def pipeline_kwargs(self) -> dict:
        """Keyword arguments of search.pipeline.PipelineRequest for the instant, classic and pipeline tiers."""
        kwargs = {"query": self.query, "retrieval_strategy": self.retrieval_strategy, "limit": self.limit}
        if isinstance(self.filter, dict):
            kwargs["filter"] = self.filter
        else:
            kwargs["filter_groups"] = self.filter
        if self.tier == "instant":
            kwargs.update(expand_query=False, interpret_filters=False, rerank=False, generate_answer=False)
        elif self.tier == "classic":
            kwargs.update(plan=True, expand_query=False, interpret_filters=False, rerank=True, generate_answer=False)
        else:
            kwargs.update({flag: bool(self.flags.get(flag)) for flag in FLAGS})
        return kwargs

    def rest_request(self) -> tuple[str, dict]:
        """(path under /collections/{id}/, JSON body) of the same search over the REST API."""
        body: dict = {"query": self.query}
        if self.tier == "agentic":
            body["limit"] = self.limit
            if self.filter:
                body["filter"] = self.filter
            return "search/agentic", body
        if self.tier in ("instant", "classic"):
            if self.tier == "instant":
                body["retrieval_strategy"] = self.retrieval_strategy
            body["limit"] = self.limit
            if self.filter:
                body["filter"] = self.filter
            return f"search/{self.tier}", body
        body.update(retrieval_strategy=self.retrieval_strategy, limit=self.limit,
                    **{flag: bool(self.flags.get(flag)) for flag in FLAGS})
        if isinstance(self.filter, dict):
            body["filter"] = self.filter
        return "search", body


def _bool(value) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("1", "true", "on", "yes")


def parse_playground(data) -> PlaygroundRequest:
    """A PlaygroundRequest from a dict (JSON) or a QueryDict (the form). Raises SearchRequestError
    with `loc` naming the bad field; the filter itself is checked by the search services."""
    get = data.get
    query = (get("query") or "").strip()
    if not query:
        raise SearchRequestError("type a query", ["query"])
    tier = get("tier") or "pipeline"
    if tier not in TIERS:
        raise SearchRequestError(f"tier must be one of {', '.join(TIERS)}", ["tier"])
    strategy = get("retrieval_strategy") or "hybrid"
    if strategy not in STRATEGIES:
        raise SearchRequestError(f"retrieval_strategy must be one of {', '.join(STRATEGIES)}", ["retrieval_strategy"])
    try:
        limit = int(get("limit") or 10)
    except (TypeError, ValueError):
        raise SearchRequestError("limit must be a whole number", ["limit"]) from None
    if not 1 <= limit <= 1000:
        raise SearchRequestError("limit must be between 1 and 1000", ["limit"])
    raw_filter = get("filter")
    if isinstance(raw_filter, str):
        raw_filter = raw_filter.strip()
        if raw_filter:
            try:
                raw_filter = json.loads(raw_filter)
            except ValueError as exc:
                raise SearchRequestError(f"the filter is not valid JSON: {exc}", ["filter"]) from None
        else:
            raw_filter = None
    if raw_filter in ([], {}):
        raw_filter = None
    if isinstance(raw_filter, dict) and tier != "pipeline":
        raise SearchRequestError("a Qdrant-style filter object works on the pipeline tier; the other tiers take "
                                 "filter groups (a list)", ["filter"])
    flags = {flag: _bool(get(flag)) for flag in FLAGS if get(flag) is not None}
    return PlaygroundRequest(query=query[:2000], tier=tier, retrieval_strategy=strategy, limit=limit, flags=flags,
                             filter=raw_filter, as_member=(get("as_member") or None))


def render_result(candidate) -> dict:
    """A result as the playground shows it: the pipeline endpoint's shape plus the entity row id
    (for the explorer link) and, for hybrid retrieval, each leg's rank."""
    return {**pipeline_result(candidate), "entity_pk": str(candidate.entity_pk) if candidate.entity_pk else None,
            "leg_ranks": candidate.leg_ranks}


def render_v2(candidate) -> dict:
    """A v2 result (classic tier) with the same additions as render_result."""
    return {**v2_candidate(candidate), "entity_pk": str(candidate.entity_pk) if candidate.entity_pk else None,
            "leg_ranks": candidate.leg_ranks}


def highlight(text: str, query: str, max_chars: int = 600):
    """`text` (cut to `max_chars`) HTML-escaped, the query's words of 3+ letters wrapped in <mark>."""
    import re

    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    text = text or ""
    if len(text) > max_chars:
        text = text[:max_chars].rsplit(" ", 1)[0] + " …"
    terms = sorted({t for t in re.findall(r"\w{3,}", query or "")}, key=len, reverse=True)
    escaped = str(escape(text))
    if not terms:
        return mark_safe(escaped)
    pattern = re.compile(r"\b(" + "|".join(re.escape(str(escape(t))) for t in terms) + r")", re.IGNORECASE)
    return mark_safe(pattern.sub(r"<mark>\1</mark>", escaped))


def cite_links(completion: str | None):
    """The answer HTML-escaped, each `[[N]]` a link to result N of the page."""
    import re

    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    if not completion:
        return ""
    return mark_safe(re.sub(r"\[\[(\d+)\]\]", r'<a class="cite" href="#result-\1" data-cite="\1">[\1]</a>',
                            str(escape(completion))))


def result_rows(results: list[dict], query: str) -> list[dict]:
    """Results of either shape (pipeline or v2) in one shape for the page: rank, name, source,
    breadcrumbs, highlighted text, score, leg ranks, links."""
    rows = []
    for rank, r in enumerate(results, start=1):
        meta = r.get("system_metadata") or r.get("airweave_system_metadata") or {}
        rows.append({"rank": rank, "name": r.get("name"), "source": meta.get("source_name"),
                     "entity_type": meta.get("entity_type"), "breadcrumbs": r.get("breadcrumbs") or [],
                     "text": highlight(r.get("textual_representation") or "", query),
                     "score": r.get("score", r.get("relevance_score")), "leg_ranks": r.get("leg_ranks"),
                     "web_url": r.get("web_url") or "", "entity_pk": r.get("entity_pk")})
    return rows
