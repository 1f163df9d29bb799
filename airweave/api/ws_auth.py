"""Websocket authentication: an API key (header `X-API-Key`, `Authorization: Bearer`, or `?api_key=`),
an OAuth access token issued by this server (`Authorization: Bearer`), or the Django session. Sets `scope["organization"]` (None when the caller has none)."""
from __future__ import annotations

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async

from airweave.tenancy.context import actor_for_credential, organization_for_user


@database_sync_to_async
def _organization(raw_key: str | None, user, requested_org: str | None):
    if raw_key:
        actor = actor_for_credential(raw_key)
        return actor.organization if actor else None
    if user is not None and getattr(user, "is_authenticated", False):
        return organization_for_user(user, requested_org)
    return None


class APIKeyOrSessionMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        query = parse_qs(scope.get("query_string", b"").decode())
        raw = headers.get("x-api-key") or (query.get("api_key") or [None])[0]
        auth = headers.get("authorization", "")
        if not raw and auth.lower().startswith("bearer "):
            raw = auth[7:].strip()
        scope["organization"] = await _organization(raw, scope.get("user"), headers.get("x-organization-id"))
        return await self.app(scope, receive, send)


def WebsocketAuthStack(app):  # noqa: N802  (named like Channels' own stacks)
    """Session auth (Channels) wrapped around API-key auth."""
    return AuthMiddlewareStack(APIKeyOrSessionMiddleware(app))
