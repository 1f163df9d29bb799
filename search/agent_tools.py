"""The tools of the agentic tier: search, read, parent/children/siblings, count, collect, finish.

Each tool takes JSON-able arguments and returns a JSON-able observation kept short enough for a
language model's context. All reads stay inside one collection and the caller's access filter:
search runs the pipeline with the caller's principals; read, parent, children, siblings and
count read only the entities and chunks the caller may see.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from airweave.collections.access import visible_q
from airweave.collections.models import Chunk, Entity
from search.filters import SQLCondition, compile_filter_groups
from search.pipeline import PipelineRequest, search_prepare, search_run
from search.results import candidate_text
from search.state import Candidate

SNIPPET_CHARS = 300
READ_CHARS = 4000


@dataclass
class AgentToolbox:
    """Tools over one collection for one caller; `collected` holds the chunks the agent kept."""

    collection: object
    principals: list[str] | None  # airweave.collections.access.principals_for; None = organization-wide
    filter_groups: list | None = None
    collected: dict[str, Candidate] = field(default_factory=dict)
    seen: dict[str, Candidate] = field(default_factory=dict)

    # OpenAI-style function definitions, sent as the model's `tools`.
    TOOLS = [
        {"name": "search", "description": "Hybrid search of the collection; returns result ids, names and snippets.",
         "parameters": {"type": "object", "additionalProperties": False, "required": ["query"], "properties": {
             "query": {"type": "string", "description": "what to look for"},
             "limit": {"type": "integer", "minimum": 1, "maximum": 25, "description": "results (default 10)"}}}},
        *({"name": name, "description": description,
           "parameters": {"type": "object", "additionalProperties": False, "required": ["entity_id"],
                          "properties": {"entity_id": {"type": "string", "description": "an original_entity_id"}}}}
          for name, description in (
              ("read", "The full text of one entity."),
              ("get_parent", "The entity's parent (its last breadcrumb)."),
              ("get_children", "Entities whose parent is this one."),
              ("get_siblings", "Entities with the same parent."))),
        {"name": "count", "description": "How many entities match the query's keywords.",
         "parameters": {"type": "object", "additionalProperties": False, "required": ["query"],
                        "properties": {"query": {"type": "string"}}}},
        {"name": "collect", "description": "Keep these result ids (from search or read) for the final answer.",
         "parameters": {"type": "object", "additionalProperties": False, "required": ["ids"],
                        "properties": {"ids": {"type": "array", "items": {"type": "string"}}}}},
        {"name": "finish", "description": "Stop; the collected results are returned.",
         "parameters": {"type": "object", "additionalProperties": False, "properties": {}}},
    ]
    NAMES = tuple(tool["name"] for tool in TOOLS)

    def run(self, tool: str, arguments: dict) -> dict:
        """Run `tool`; unknown tools and bad arguments give an error observation, never an exception."""
        method = getattr(self, f"tool_{tool}", None)
        if method is None or tool not in self.NAMES:
            return {"error": f"unknown tool '{tool}'; tools: {', '.join(self.NAMES)}"}
        if _holds_nul(arguments):  # PostgreSQL text cannot hold it: refuse before any query
            return {"error": f"bad arguments for {tool}: strings must not contain NUL (\\u0000) characters"}
        try:
            return method(**(arguments or {}))
        except (TypeError, ValueError) as exc:
            return {"error": f"bad arguments for {tool}: {exc}"}

    # --- tools ---
    def tool_search(self, query: str, limit: int = 10) -> dict:
        limit = max(1, min(int(limit), 25))
        prepared = search_prepare(collection=self.collection, principals=self.principals, request=PipelineRequest(
            query=str(query)[:1000], filter_groups=self.filter_groups, limit=limit, expand_query=False,
            interpret_filters=False, rerank=False, generate_answer=False), metered=False, tier="agentic")
        candidates = search_run(prepared, render=lambda c: c).results
        out = []
        for c in candidates:
            if c.federated is not None:  # a federated source's result: no chunk row behind it
                key, name, entity_id = str(c.federated.get("entity_id")), c.federated.get("name", ""), None
            else:
                key, name, entity_id = c.chunk.public_id, c.chunk.name, c.chunk.original_entity_id
            self.seen[key] = c
            out.append({"id": key, "name": name, "entity_id": entity_id,
                        "snippet": candidate_text(c)[:SNIPPET_CHARS]})
        return {"results": out}

    def tool_read(self, entity_id: str) -> dict:
        chunks = list(self._chunks().filter(original_entity_id=entity_id).order_by("chunk_index"))
        if not chunks:
            return {"error": f"no entity '{entity_id}'"}
        for c in chunks:
            self.seen.setdefault(c.public_id, Candidate(chunk_id=c.id, entity_pk=c.entity_id, score=0.0, chunk=c))
        return {"entity_id": entity_id, "name": chunks[0].name, "text": "\n".join(c.text for c in chunks)[:READ_CHARS],
                "ids": [c.public_id for c in chunks]}

    def tool_get_parent(self, entity_id: str) -> dict:
        entity = self._entities().filter(entity_id=entity_id).first()
        if entity is None:
            return {"error": f"no entity '{entity_id}'"}
        return {"parent": entity.breadcrumbs[-1] if entity.breadcrumbs else None}

    def tool_get_children(self, entity_id: str) -> dict:
        rows = self._entities().filter(breadcrumbs__contains=[{"entity_id": entity_id}])
        children = [e for e in rows[:200] if e.breadcrumbs and e.breadcrumbs[-1].get("entity_id") == entity_id]
        return {"children": [{"entity_id": e.entity_id, "name": e.name} for e in children[:50]]}

    def tool_get_siblings(self, entity_id: str) -> dict:
        entity = self._entities().filter(entity_id=entity_id).first()
        if entity is None:
            return {"error": f"no entity '{entity_id}'"}
        parent = entity.breadcrumbs[-1]["entity_id"] if entity.breadcrumbs else None
        if parent is None:
            rows = self._entities().filter(breadcrumbs=[])
        else:
            rows = [e for e in self._entities().filter(breadcrumbs__contains=[{"entity_id": parent}])[:200]
                    if e.breadcrumbs and e.breadcrumbs[-1].get("entity_id") == parent]
        return {"siblings": [{"entity_id": e.entity_id, "name": e.name} for e in list(rows)[:50]
                             if e.entity_id != entity_id]}

    def tool_count(self, query: str) -> dict:
        from search.retrieval import RetrievalQuery, keyword_leg

        hits = keyword_leg(RetrievalQuery(collection_id=self.collection.id, dims=self.collection.vector_size,
                                          text=str(query), condition=self._condition(), principals=self.principals,
                                          strategy="keyword"), 10_000)
        return {"count": len({h.entity_pk for h in hits})}

    def tool_collect(self, ids: list) -> dict:
        added = [i for i in ids if i in self.seen]
        for i in added:
            self.collected[i] = self.seen[i]
        return {"collected": len(self.collected), "unknown": [i for i in ids if i not in self.seen]}

    def tool_finish(self) -> dict:
        return {"finished": True, "collected": len(self.collected)}

    # --- scoping ---
    def _condition(self) -> SQLCondition:
        return compile_filter_groups(self.filter_groups)

    def _chunks(self):
        return Chunk.objects.filter(visible_q(self.principals), collection_id=self.collection.id)

    def _entities(self):
        return Entity.objects.filter(visible_q(self.principals), collection_id=self.collection.id)


def _holds_nul(value) -> bool:
    """True when a string anywhere in `value` (keys included) holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False
