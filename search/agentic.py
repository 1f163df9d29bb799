"""The agentic tier: a language model drives a bounded loop of tools over the collection.

Each step the model answers with structured output `{thought, tool, arguments_json}`; the tool
runs (search/agent_tools.py) and its observation is added to the transcript. The loop stops at
`finish` or after `agentic_max_iterations` (defaults.yml). Events: `start`, `thinking` (when asked),
`tool_call`, `done`; without any language model the agent makes one hybrid search and says why.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from airweave.collections.models import Collection
from airweave.events import EventStream
from airweave.providers.catalog import search_defaults
from airweave.providers.errors import NoProviderAvailable
from airweave.providers.factory import chain_for
from search.agent_tools import AgentToolbox
from search.filters import parse_filter_groups
from search.instant import SearchRequestError
from search.results import v2_candidate

SYSTEM = ("You are a research agent searching one document collection to find every result that answers the "
          "user's question. Each turn, think briefly, then call exactly one tool. Search with different "
          "wordings, read promising entities, and collect the result ids that answer the question. Call "
          "finish when you have collected enough.\nTools:\n")
SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["thought", "tool", "arguments_json"],
    "properties": {
        "thought": {"type": "string"},
        "tool": {"type": "string", "enum": list(AgentToolbox.SPECS)},
        "arguments_json": {"type": "string", "description": "the tool's arguments as a JSON object"},
    },
}
OBSERVATION_CHARS = 6000


@dataclass
class AgenticResponse:
    results: list[dict]
    iterations: int
    provider: str | None
    events: list[dict]


def search_agentic(*, collection: Collection, query: str, principals: list[str] | None,
                   filter_groups: list | None = None, limit: int = 100, thinking: bool = False,
                   stream: EventStream | None = None) -> AgenticResponse:
    """Run the agent over `collection` for a caller with `principals` (None: organization-wide).

    Raises SearchRequestError / FilterError on bad input.
    """
    query = (query or "").strip()
    if not query:
        raise SearchRequestError("query must not be empty", ["query"])
    if not 1 <= limit <= 1000:
        raise SearchRequestError("limit must be between 1 and 1000", ["limit"])
    parse_filter_groups(filter_groups)  # validate before anything runs
    stream = stream or EventStream()
    toolbox = AgentToolbox(collection=collection, principals=principals, filter_groups=filter_groups)
    stream.emit("start", query=query, collection_id=collection.readable_id)
    max_iterations = int(search_defaults().get("agentic_max_iterations", 6))
    chain = chain_for("agentic")
    system = SYSTEM + "\n".join(f"- {spec}" for spec in AgentToolbox.SPECS.values())
    transcript = [f"Question: {query}"]
    iterations, provider, last_search = 0, None, []
    while iterations < max_iterations:
        iterations += 1
        try:
            step, provider = chain.call(lambda model, spec: model.complete_json(
                system=system, user="\n\n".join(transcript), schema=SCHEMA, name="agent_step"))
        except NoProviderAvailable as exc:
            if iterations == 1:
                return _without_model(toolbox, query, limit, thinking, stream, str(exc))
            stream.emit("error", message=f"the agent lost its language model: {exc}")
            break
        tool = step.get("tool", "")
        try:
            arguments = json.loads(step.get("arguments_json") or "{}")
        except json.JSONDecodeError:
            arguments = None
        if thinking and step.get("thought"):
            stream.emit("thinking", text=step["thought"], iteration=iterations)
        observation = (toolbox.run(tool, arguments) if isinstance(arguments, dict)
                       else {"error": "arguments_json must be a JSON object"})
        if tool == "search" and "results" in observation:
            last_search = [r["id"] for r in observation["results"]]
        stream.emit("tool_call", tool=tool, arguments=arguments, iteration=iterations,
                    result_count=len(observation.get("results", observation.get("children", []))))
        transcript.append(f"Step {iterations}: {tool}({json.dumps(arguments)})\n"
                          f"Observation: {json.dumps(observation, default=str)[:OBSERVATION_CHARS]}")
        if tool == "finish":
            break
    chosen = list(toolbox.collected.values()) or [toolbox.seen[i] for i in last_search if i in toolbox.seen]
    results = [v2_candidate(c) for c in chosen[:limit]]
    stream.emit("done", results=results, iterations=iterations, provider=provider)
    return AgenticResponse(results=results, iterations=iterations, provider=provider, events=stream.events)


def _without_model(toolbox: AgentToolbox, query: str, limit: int, thinking: bool, stream: EventStream,
                   reason: str) -> AgenticResponse:
    if thinking:
        stream.emit("thinking", text=f"No language model is available ({reason}); running one hybrid search.",
                    iteration=1)
    observation = toolbox.tool_search(query, limit=min(limit, 25))
    stream.emit("tool_call", tool="search", arguments={"query": query, "limit": min(limit, 25)}, iteration=1,
                result_count=len(observation["results"]))
    results = [v2_candidate(toolbox.seen[r["id"]]) for r in observation["results"]][:limit]
    stream.emit("done", results=results, iterations=1, provider=None)
    return AgenticResponse(results=results, iterations=1, provider=None, events=stream.events)
