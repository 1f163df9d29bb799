"""Search results as the Markdown an agent reads: a header, then one cited section per result."""
from __future__ import annotations

MAX_TEXT_CHARS = 4000  # per result, in the Markdown only (structured content keeps the full text)


def _breadcrumb_trail(result: dict) -> str:
    return " › ".join(b.get("name") or b.get("entity_id", "") for b in result.get("breadcrumbs") or [])


def _link(result: dict) -> str:
    return result.get("url") or result.get("web_url") or ""


def _quote(text: str) -> str:
    text = (text or "").strip()
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS].rstrip() + " …"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or "> (no text)"


def results_markdown(*, collection: str, tier: str, query: str, results: list[dict], offset: int = 0) -> str:
    """Markdown of v2 SearchResults: a header (collection, tier, result count), then per result its
    rank, score, name, source, breadcrumb trail, text and link."""
    count = len(results)
    lines = [f"# Search results from collection `{collection}`", "",
             f"Tier: {tier} · {count} result{'s' if count != 1 else ''}"
             + (f" (from rank {offset + 1})" if offset else "") + f" · Query: {query}"]
    if not results:
        lines += ["", "No results. Try other words, another tier, or a broader filter."]
    for rank, result in enumerate(results, start=offset + 1):
        meta = result.get("airweave_system_metadata") or {}
        score = result.get("relevance_score")
        facts = [f"Score: {score:.4f}" if isinstance(score, (int, float)) else None,
                 f"Source: {meta.get('source_name')}" if meta.get("source_name") else None,
                 f"Path: {_breadcrumb_trail(result)}" if result.get("breadcrumbs") else None]
        lines += ["", f"## {rank}. {result.get('name') or result.get('entity_id')}",
                  " · ".join(f for f in facts if f)]
        if link := _link(result):
            lines.append(f"Link: {link}")
        lines += ["", _quote(result.get("textual_representation", ""))]
    return "\n".join(lines) + "\n"
