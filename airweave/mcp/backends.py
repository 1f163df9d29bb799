"""What the MCP tools call: the search services in this process, or the REST API of a remote server.

Both answer the same things in the same shapes (v2 SearchResult dicts, docs/api.md), so the tools do
not know which one they have. Every failure a caller can fix is raised as `ToolError` with a
message saying what to fix; the SDK answers it as a tool error (`isError: true`), never a crash.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import httpx
from channels.db import database_sync_to_async
from mcp.server.mcpserver.exceptions import ToolError

from airweave.api.throttling import rate_limit_consume
from airweave.collections import selectors
from airweave.collections.access import principals_for
from airweave.collections.models import Collection
from airweave.providers.embeddings import ProviderUnavailable
from airweave.providers.errors import ProviderError
from airweave.tenancy.context import actor_for_credential
from airweave.tenancy.quotas import QuotaExceeded
from search.agentic import search_agentic
from search.filters import FilterError
from search.instant import InstantSearchRequest, SearchRequestError, search_instant
from search.pipeline import search_classic

LISTED_COLLECTIONS = 25
REMOTE_TIMEOUT_SECONDS = 300.0  # an agentic search may run several language-model steps


@dataclass(frozen=True)
class SearchArgs:
    """One validated tool call: `filter` holds v2 filter groups as plain dicts."""

    query: str
    tier: str = "classic"
    retrieval_strategy: str = "hybrid"
    limit: int = 100
    offset: int = 0
    thinking: bool = False
    filter: list[dict] | None = None


class SearchBackend(Protocol):
    """The operations the MCP tools need. Raise ToolError for anything the caller can fix."""

    async def search(self, collection: str, args: SearchArgs) -> list[dict]:
        """v2 SearchResults of `collection` for `args`, ranked."""

    async def collections(self, limit: int = LISTED_COLLECTIONS) -> list[dict]:
        """The caller's collections, oldest first: [{readable_id, name}]."""

    def describe(self) -> dict:
        """What get-config shows about where searches run and who the caller is."""


def _search_error(exc: Exception) -> ToolError:
    if isinstance(exc, QuotaExceeded):
        return ToolError(str(exc))  # names the limit and the setting that raises it
    if isinstance(exc, (SearchRequestError, FilterError)):
        where = ".".join(str(p) for p in exc.loc)
        return ToolError(f"Invalid {where}: {exc}" if where else f"Invalid request: {exc}")
    return ToolError(f"A model provider could not answer: {exc}")


@dataclass
class InProcessBackend:
    """Runs searches with the search services of this process, for one organization (the caller's).

    `actor` (an APIKeyActor or OAuthActor) decides what the caller may see: an organization-wide
    key sees the whole organization, a user-bound key or an OAuth token what its user may see
    (airweave.collections.access.principals_for). Without an actor: the whole organization.

    `credential` (the raw key of a long-lived stdio server) is checked again on every call, so a key
    revoked, expired or whose user left the organization stops working at once, as over HTTP
    (where every request authenticates anew and no credential is kept).
    """

    organization: object
    authentication: str = "api_key"  # or "oauth"
    user_email: str | None = None
    actor: object = None
    credential: str | None = field(default=None, repr=False)

    def _check_credential(self) -> None:
        if self.credential is None:
            return
        actor = actor_for_credential(self.credential)
        if actor is None or actor.organization.pk != self.organization.pk:
            raise ToolError("AIRWEAVE_API_KEY is no longer valid (revoked, expired, or its user left the "
                            "organization): set a new key and restart the MCP server.")
        self.actor = actor

    def _principals(self) -> list[str] | None:
        if self.actor is None:
            return None
        return principals_for(actor=self.actor, organization=self.organization)

    async def search(self, collection: str, args: SearchArgs) -> list[dict]:
        return await database_sync_to_async(self._search)(collection, args)

    def _search(self, readable_id: str, args: SearchArgs) -> list[dict]:
        self._check_credential()
        try:
            collection = selectors.collection_get(organization=self.organization, readable_id=readable_id)
        except Collection.DoesNotExist:
            raise ToolError(collection_not_found(readable_id, self._collections())) from None
        # A search counts against the organization's search rate, as on the REST API.
        state = rate_limit_consume("search", "AIRWEAVE_SEARCH_RATE_LIMIT", self.organization.pk)
        if state is not None and not state.allowed:
            raise ToolError(f"Rate limit exceeded: this organization may search {state.limit} times per window "
                            f"(AIRWEAVE_SEARCH_RATE_LIMIT); retry in {state.reset} s.")
        principals = self._principals()
        try:
            if args.tier == "instant":
                return search_instant(collection=collection, principals=principals, request=InstantSearchRequest(
                    query=args.query, retrieval_strategy=args.retrieval_strategy, filter=args.filter,
                    limit=args.limit, offset=args.offset)).results
            if args.tier == "classic":
                return search_classic(collection=collection, query=args.query, filter_groups=args.filter,
                                      limit=args.limit, offset=args.offset, principals=principals).results
            # The agentic tier has no offset of its own: ask for offset + limit and skip the first ones.
            results = search_agentic(collection=collection, query=args.query, filter_groups=args.filter,
                                     principals=principals,
                                     limit=min(1000, args.offset + args.limit), thinking=args.thinking).results
            return results[args.offset:args.offset + args.limit]
        except (SearchRequestError, FilterError, QuotaExceeded, ProviderUnavailable, ProviderError) as exc:
            raise _search_error(exc) from None

    async def collections(self, limit: int = LISTED_COLLECTIONS) -> list[dict]:
        return await database_sync_to_async(self._collections)(limit)

    def _collections(self, limit: int = LISTED_COLLECTIONS) -> list[dict]:
        self._check_credential()
        return [{"readable_id": c.readable_id, "name": c.name}
                for c in selectors.collection_list(organization=self.organization, limit=limit)]

    def describe(self) -> dict:
        return {"mode": "in-process", "organization": self.organization.name, "authentication": self.authentication,
                **({"user": self.user_email} if self.user_email else {})}


@dataclass
class RemoteBackend:
    """Runs searches through the REST API of the server at `base_url`, with an API key."""

    base_url: str
    api_key: str
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False)

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url.rstrip("/"), headers={"X-API-Key": self.api_key},
                                 timeout=REMOTE_TIMEOUT_SECONDS, transport=self.transport)

    async def search(self, collection: str, args: SearchArgs) -> list[dict]:
        body: dict = {"query": args.query, "limit": args.limit}
        if args.filter:
            body["filter"] = args.filter
        if args.tier == "instant":
            body.update(retrieval_strategy=args.retrieval_strategy, offset=args.offset)
        elif args.tier == "classic":
            body["offset"] = args.offset
        else:
            body.update(thinking=args.thinking, limit=min(1000, args.offset + args.limit))
        path = f"/collections/{collection}/search/{args.tier}"
        async with self._client() as client:
            response = await self._call(client, "POST", path, json=body)
            if response.status_code == 404:
                raise ToolError(collection_not_found(collection, await self._list(client)))
            self._raise_for(response)
            results = response.json()["results"]
        return results[args.offset:args.offset + args.limit] if args.tier == "agentic" else results

    async def collections(self, limit: int = LISTED_COLLECTIONS) -> list[dict]:
        async with self._client() as client:
            return await self._list(client, limit)

    async def _list(self, client: httpx.AsyncClient, limit: int = LISTED_COLLECTIONS) -> list[dict]:
        response = await self._call(client, "GET", "/collections", params={"limit": limit})
        self._raise_for(response)
        return [{"readable_id": c["readable_id"], "name": c["name"]} for c in response.json()]

    async def _call(self, client: httpx.AsyncClient, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            return await client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ToolError(f"Could not reach {self.base_url}: {exc}") from None

    def _raise_for(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text[:500]
        if isinstance(detail, list):
            detail = "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail)
        if response.status_code == 401:
            raise ToolError(f"{self.base_url} refused the API key (AIRWEAVE_API_KEY): {detail}")
        raise ToolError(f"{self.base_url} answered {response.status_code}: {detail}")

    def describe(self) -> dict:
        return {"mode": "remote", "base_url": self.base_url, "authentication": "api_key",
                "api_key": mask(self.api_key)}


def mask(secret: str) -> str:
    """A secret as shown to people: its first 8 characters, then an ellipsis."""
    return f"{secret[:8]}…" if secret else ""


def collection_not_found(readable_id: str | None, collections: list[dict]) -> str:
    """The error text for a missing or unknown collection, listing (up to 25 of) the caller's collections."""
    head = (f"Collection '{readable_id}' was not found in your organization." if readable_id else
            "No collection is selected: set the X-Collection-Readable-ID header (HTTP) or AIRWEAVE_COLLECTION "
            "(stdio), or pass `collection`.")
    if not collections:
        return f"{head} Your organization has no collections yet."
    listed = "\n".join(f"- {c['readable_id']} ({c['name']})" for c in collections[:LISTED_COLLECTIONS])
    return f"{head} Your collections (up to {LISTED_COLLECTIONS}):\n{listed}"
