"""The agentic tier: a language model drives a bounded loop of tools over the collection.

Each step is one assistant turn with native tool calling (the OpenAI `tools` protocol, which every
OpenAI-compatible provider of defaults.yml speaks): the model may call one or more tools
(search/agent_tools.py), each observation goes back as a `tool` message. The loop stops when the
model calls `finish`, answers without a tool call, or after `agentic_max_iterations` turns
(defaults.yml). Events have the shapes of the public Airweave API's agentic stream (its SDK parses
each one and drops any that does not fit): `started {request_id, tier, collection_readable_id,
query, thinking, filter, limit}`, `thinking {text, thinking, duration_ms, diagnostics {iteration}}`
(the model's text beside its calls, when asked), `tool_call {tool_name, duration_ms, diagnostics
{iteration, tool_call_id, arguments}}` (tool names as Airweave names them: `add_to_results` for
collect, `return_results_to_user` for finish, `get_parent`/`get_children`/`get_siblings`), `done
{results, duration_ms, diagnostics}` and `error {message, duration_ms}`. This server's own fields
ride along (`tool`, `arguments`, `iteration`, `result_count`). Without any language model (or when
its provider refuses the first turn, with an `error` event) the agent makes one hybrid search and says why.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

from airweave.collections.models import Collection
from airweave.events import EventStream
from airweave.providers.catalog import search_defaults
from airweave.providers.errors import NoProviderAvailable, ProviderError
from airweave.providers.factory import chain_for
from airweave.tenancy.quotas import search_quota_consume
from search.agent_tools import AgentToolbox
from search.filters import parse_filter_groups
from search.instant import SearchRequestError, query_text
from search.results import v2_candidate

SYSTEM = ("You are a research agent searching one document collection to find every result that answers the "
          "user's question. Think briefly before each tool call. Search with different wordings, read promising "
          "entities, and collect the result ids that answer the question. Call finish when you have collected "
          "enough.")
OBSERVATION_CHARS = 6000
# This server's tool names -> the names of Airweave's agent (AgenticSearchToolCallEvent.tool_name).
AIRWEAVE_TOOL_NAMES = {"collect": "add_to_results", "finish": "return_results_to_user", "parent": "get_parent",
                       "children": "get_children", "siblings": "get_siblings"}


class _Clock:
    """Milliseconds since the run started, and since the previous event (`duration_ms`)."""

    def __init__(self):
        self.start = self.last = time.monotonic()

    def step(self) -> int:
        now = time.monotonic()
        elapsed, self.last = now - self.last, now
        return int(elapsed * 1000)

    def total(self) -> int:
        return int((time.monotonic() - self.start) * 1000)


def _tool_call(stream: EventStream, clock: _Clock, name: str, arguments, iteration: int, result_count: int,
               call_id: str | None = None) -> None:
    stream.emit("tool_call", tool_name=AIRWEAVE_TOOL_NAMES.get(name, name), duration_ms=clock.step(),
                diagnostics={"iteration": iteration, "tool_call_id": call_id, "arguments": arguments},
                tool=name, arguments=arguments, iteration=iteration, result_count=result_count)


def _thinking(stream: EventStream, clock: _Clock, text: str, iteration: int) -> None:
    stream.emit("thinking", text=text, thinking=text, duration_ms=clock.step(), diagnostics={"iteration": iteration},
                iteration=iteration)


def _done(stream: EventStream, clock: _Clock, results: list, iterations: int, provider, max_hit: bool,
          toolbox) -> None:
    stream.emit("done", results=results, duration_ms=clock.total(), iterations=iterations, provider=provider,
                diagnostics={"total_iterations": iterations, "max_iterations_hit": max_hit,
                             "all_seen_entity_ids": list(toolbox.seen), "all_collected_entity_ids": list(toolbox.collected)})


@dataclass
class AgenticResponse:
    results: list[dict]
    iterations: int
    provider: str | None
    events: list[dict]


def search_agentic(*, collection: Collection, query: str, principals: list[str] | None,
                   filter_groups: list | None = None, limit: int | None = 100, thinking: bool = False,
                   stream: EventStream | None = None) -> AgenticResponse:
    """Run the agent over `collection` for a caller with `principals` (None: organization-wide).

    Raises SearchRequestError / FilterError on bad input, and QuotaExceeded past the
    organization's monthly searches (one agentic run counts one search). `limit` None lets the
    agent decide (what it collected, at most 1000).
    """
    query = query_text(query)
    requested_limit = limit
    limit = 1000 if limit is None else limit
    if not 1 <= limit <= 1000:
        raise SearchRequestError("limit must be between 1 and 1000", ["limit"])
    parse_filter_groups(filter_groups)  # validate before anything runs
    search_quota_consume(collection.organization_id)
    stream = stream or EventStream()
    toolbox = AgentToolbox(collection=collection, principals=principals, filter_groups=filter_groups)
    clock = _Clock()
    stream.emit("started", request_id=str(uuid.uuid4()), tier="agentic", collection_readable_id=collection.readable_id,
                query=query, thinking=thinking, filter=filter_groups, limit=requested_limit,
                collection_id=collection.readable_id)
    max_iterations = int(search_defaults().get("agentic_max_iterations", 6))
    chain = chain_for("agentic")
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": query}]
    iterations, provider, last_search, finished = 0, None, [], False
    while iterations < max_iterations and not finished:
        iterations += 1
        try:
            turn, provider = chain.call(lambda model, spec: model.complete_tools(messages=messages,
                                                                               tools=AgentToolbox.TOOLS))
        except (NoProviderAvailable, ProviderError) as exc:
            # A refused key or a bad request (not retried down the chain) ends the loop like a missing model.
            if iterations == 1:
                if isinstance(exc, ProviderError):
                    stream.emit("error", message=f"the language model failed: {exc}", duration_ms=clock.total())
                return _without_model(toolbox, query, limit, thinking, stream, str(exc), clock)
            stream.emit("error", message=f"the agent lost its language model: {exc}", duration_ms=clock.total())
            break
        if thinking and turn["content"]:
            _thinking(stream, clock, turn["content"], iterations)
        if not turn["tool_calls"]:  # an answer without a call ends the loop like `finish`
            break
        messages.append({"role": "assistant", "content": turn["content"] or None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}
            for call in turn["tool_calls"]]})
        for call in turn["tool_calls"]:
            observation, arguments = _run_call(toolbox, call)
            if call["name"] == "search" and "results" in observation:
                last_search = [r["id"] for r in observation["results"]]
            _tool_call(stream, clock, call["name"], arguments, iterations,
                       len(observation.get("results", observation.get("children", []))), call.get("id"))
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": json.dumps(observation, default=str)[:OBSERVATION_CHARS]})
            finished = finished or call["name"] == "finish"
    chosen = list(toolbox.collected.values()) or [toolbox.seen[i] for i in last_search if i in toolbox.seen]
    results = [v2_candidate(c) for c in chosen[:limit]]
    _done(stream, clock, results, iterations, provider, iterations >= max_iterations and not finished, toolbox)
    return AgenticResponse(results=results, iterations=iterations, provider=provider, events=stream.events)


def _run_call(toolbox: AgentToolbox, call: dict) -> tuple[dict, dict | None]:
    """Run one tool call; arguments that are not a JSON object come back to the model as an error."""
    try:
        arguments = json.loads(call["arguments"] or "{}")
    except json.JSONDecodeError:
        arguments = None
    if not isinstance(arguments, dict):
        return {"error": "the arguments must be a JSON object"}, None
    return toolbox.run(call["name"], arguments), arguments


def _without_model(toolbox: AgentToolbox, query: str, limit: int, thinking: bool, stream: EventStream,
                   reason: str, clock: _Clock) -> AgenticResponse:
    if thinking:
        _thinking(stream, clock, f"No language model is available ({reason}); running one hybrid search.", 1)
    observation = toolbox.tool_search(query, limit=min(limit, 25))
    _tool_call(stream, clock, "search", {"query": query, "limit": min(limit, 25)}, 1, len(observation["results"]))
    results = [v2_candidate(toolbox.seen[r["id"]]) for r in observation["results"]][:limit]
    _done(stream, clock, results, 1, None, False, toolbox)
    return AgenticResponse(results=results, iterations=1, provider=None, events=stream.events)
