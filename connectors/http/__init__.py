"""The HTTP layer of SaaS sources: one client per source run (see client.py and docs/connectors.md)."""
from __future__ import annotations

from connectors.http.client import HttpClient
from connectors.http.errors import BlockedAddress, HttpError, NetworkError, RateLimited
from connectors.http.pagination import cursor_pages, link_pages, offset_pages
from connectors.http.ratelimit import RateLimiter, limiter_key

__all__ = ["HttpClient", "HttpError", "RateLimited", "NetworkError", "BlockedAddress", "RateLimiter",
           "client_for_source", "link_pages", "cursor_pages", "offset_pages"]


def client_for_source(source) -> HttpClient:
    """The HttpClient of `source` (a BaseSource): its base_url, `http_auth()`, its declared rate
    limit keyed by organization or connection, and auth failures marked on its connection."""
    context = source.context
    limiter = None
    if source.rate_limit_level and source.rate_limit:
        limiter = RateLimiter(source.rate_limit, limiter_key(
            source.short_name, source.rate_limit_level, organization_id=getattr(context, "organization_id", None),
            source_connection_id=getattr(context, "source_connection_id", None)))
    store = getattr(context, "credential_store", None)
    on_auth_failure = (lambda exc: store.mark_needs_reauth(exc.category, str(exc))) if store is not None else None
    return HttpClient(base_url=source.base_url or "", auth=source.http_auth(), headers=source.http_headers(),
                      rate_limiter=limiter, on_auth_failure=on_auth_failure)
