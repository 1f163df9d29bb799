"""The MCP server of one caller: the `search-{collection}` tool (or `search` when no collection is
configured) and `get-config`, built fresh for each HTTP request or once per stdio process.

Arguments are validated by the SDK against the signatures below (a bad argument answers a tool
error naming it); the tools only shape arguments, call the backend, and render its results.
"""
import functools
import json
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from airweave.collections.models import READABLE_ID_RE
from airweave.mcp.backends import SearchArgs, SearchBackend, collection_not_found
from airweave.mcp.render import results_markdown

Tier = Literal["instant", "classic", "agentic"]
Strategy = Literal["hybrid", "semantic", "keyword"]
Operator = Literal["equals", "not_equals", "contains", "greater_than", "less_than", "greater_than_or_equal",
                   "less_than_or_equal", "in", "not_in"]
Scalar = str | int | float | bool

TIER_HELP = ("instant: embed + retrieve, no language model (fastest); classic: a language model plans the "
             "search, then results are reranked (default); agentic: an agent searches, reads and collects "
             "iteratively (slowest, most thorough).")


class FilterCondition(BaseModel):
    """One condition of a v2 filter group."""

    model_config = ConfigDict(extra="forbid")
    field: str = Field(description="e.g. name, created_at, updated_at, breadcrumbs.name, "
                                   "airweave_system_metadata.source_name, airweave_system_metadata.entity_type")
    operator: Operator
    value: Scalar | list[Scalar] = Field(description="a list for in / not_in; ISO-8601 for dates")


class FilterGroup(BaseModel):
    """Conditions ANDed together; several groups are ORed."""

    model_config = ConfigDict(extra="forbid")
    conditions: list[FilterCondition] = Field(min_length=1)


class SearchOutput(BaseModel):
    """The structured content of a search: the same results as the Markdown, as v2 SearchResults."""

    collection: str
    tier: str
    query: str
    count: int
    offset: int
    results: list[dict[str, Any]]


Query = Annotated[str, Field(min_length=1, max_length=1000, description="What to search for, in natural language.")]
TierArg = Annotated[Tier, Field(description=TIER_HELP)]
StrategyArg = Annotated[Strategy, Field(description="Retrieval strategy of the instant tier.")]
Limit = Annotated[int, Field(ge=1, le=1000, description="How many results to return.")]
Offset = Annotated[int, Field(ge=0, description="How many top results to skip (pagination).")]
Thinking = Annotated[bool, Field(description="agentic tier: stream the agent's reasoning into the server's events.")]
Filter = Annotated[list[FilterGroup] | None, Field(description="v2 filter groups: AND inside a group, OR across groups.")]
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


class CallerServer(MCPServer):
    """An MCPServer that knows its caller: the backend its tools search through and the collection."""

    def __init__(self, *, backend: SearchBackend, collection: str | None, transport: str, **kwargs):
        self.backend, self.collection, self.transport = backend, collection, transport
        super().__init__(**kwargs)


def _args(query, tier, retrieval_strategy, limit, offset, thinking, filter) -> SearchArgs:
    groups = [g.model_dump(mode="json") for g in filter] if filter else None
    return SearchArgs(query=query, tier=tier, retrieval_strategy=retrieval_strategy, limit=limit, offset=offset,
                      thinking=thinking, filter=groups)


async def _search(server: CallerServer, readable_id: str | None, args: SearchArgs) -> CallToolResult:
    if not readable_id:
        raise ToolError(collection_not_found(None, await server.backend.collections()))
    results = await server.backend.search(readable_id, args)
    text = results_markdown(collection=readable_id, tier=args.tier, query=args.query, results=results,
                            offset=args.offset)
    output = SearchOutput(collection=readable_id, tier=args.tier, query=args.query, count=len(results),
                          offset=args.offset, results=results)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=output.model_dump(mode="json"))


async def search_collection(ctx: Context, query: Query, tier: TierArg = "classic",
                            retrieval_strategy: StrategyArg = "hybrid", limit: Limit = 100, offset: Offset = 0,
                            thinking: Thinking = False, filter: Filter = None) -> Annotated[CallToolResult, SearchOutput]:
    """`search-{collection}`: search the server's collection."""
    server = ctx.mcp_server
    return await _search(server, server.collection, _args(query, tier, retrieval_strategy, limit, offset, thinking,
                                                         filter))


async def search_any_collection(
        ctx: Context, query: Query,
        collection: Annotated[str | None, Field(description="readable id of the collection")] = None,
        tier: TierArg = "classic", retrieval_strategy: StrategyArg = "hybrid", limit: Limit = 100, offset: Offset = 0,
        thinking: Thinking = False, filter: Filter = None) -> Annotated[CallToolResult, SearchOutput]:
    """`search` (no collection configured): the collection is an argument."""
    return await _search(ctx.mcp_server, collection, _args(query, tier, retrieval_strategy, limit, offset, thinking,
                                                           filter))


async def get_config(ctx: Context) -> CallToolResult:
    """`get-config`: where searches run, for whom, over which transport."""
    server = ctx.mcp_server
    config = {"server": "airweave", "version": server.version, "transport": server.transport,
              "collection": server.collection,
              "search_tool": f"search-{server.collection}" if server.collection else "search",
              "tiers": ["instant", "classic", "agentic"], "default_tier": "classic", **server.backend.describe()}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(config, indent=2))],
                          structured_content=config)


@functools.cache
def _tool_definitions() -> dict[str, Tool]:
    """The tools, with their argument models and schemas, built once per process (about 7 ms of
    pydantic work that every request would otherwise repeat); each server copies and renames them."""
    return {
        "search-collection": Tool.from_function(search_collection, name="search-collection", annotations=READ_ONLY),
        "search": Tool.from_function(
            search_any_collection, name="search", title="Search a collection", annotations=READ_ONLY,
            description="Search one of your collections (no collection is configured: pass `collection`; without "
                        "it the answer lists your collections)."),
        "get-config": Tool.from_function(
            get_config, name="get-config", title="Configuration", annotations=READ_ONLY,
            description="Show this MCP server's configuration: collection, organization, where searches run."),
    }


def build_server(*, backend: SearchBackend, collection: str | None, transport: str) -> CallerServer:
    """An MCP server whose tools search `collection` through `backend`.

    `collection` None (no header, no AIRWEAVE_COLLECTION) gives a `search` tool that takes the
    collection as an argument and, without one, answers an error listing the caller's collections.
    `transport` ("stdio" or "streamable-http") is only reported by get-config.
    Raises ValueError when `collection` is not a readable id (it names a tool).
    """
    if collection is not None and not READABLE_ID_RE.match(collection):
        raise ValueError(f"'{collection}' is not a collection readable id (lowercase letters, digits and dashes)")
    tools = _tool_definitions()
    if collection:
        search = tools["search-collection"].model_copy(update={
            "name": f"search-{collection}", "title": f"Search {collection}",
            "description": f"Search the '{collection}' collection. Answers ranked results, each with its score, "
                           "name, source, breadcrumb trail, text and link to cite."})
    else:
        search = tools["search"]
    return CallerServer(
        backend=backend, collection=collection, transport=transport, tools=[search, tools["get-config"]],
        name="airweave", version=settings.SPECTACULAR_SETTINGS["VERSION"],
        instructions=(f"Search the '{collection}' collection with search-{collection}; cite results by their link."
                      if collection else "Search a collection with `search`; get-config shows the configuration."),
    )
