"""Websocket authentication: an API key (header `X-API-Key`, `Authorization: Bearer`, or `?api_key=`),
an OAuth access token issued by this server (`Authorization: Bearer`), or the Django session. Sets
`scope["actor"]` (an APIKeyActor, an OAuthActor or the user), `scope["organization"]` (None when
the caller has none) and `scope["principals"]`, the caller's access principals
(airweave.collections.access.principals_for: None for an organization-wide key, the user's
principals for a session user, a user-bound key or an OAuth token)."""
from __future__ import annotations

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async

from airweave.collections.access import principals_for
from airweave.tenancy.context import SESSION_ORGANIZATION_KEY, actor_for_credential, organization_for_user


@database_sync_to_async
def _caller(raw_key: str | None, user, requested_org: str | None, session) -> tuple:
    """(actor, organization, principals): an APIKeyActor or the session user, the organization it
    acts for (None when none) and its access principals."""
    if raw_key:
        actor = actor_for_credential(raw_key)
        if actor is None:
            return None, None, []
        if requested_org and requested_org != str(actor.organization.pk):
            return actor, None, []
        return actor, actor.organization, principals_for(actor=actor, organization=actor.organization)
    if user is not None and getattr(user, "is_authenticated", False):
        current = session.get(SESSION_ORGANIZATION_KEY) if session is not None else None
        organization = organization_for_user(user, requested_org, current)
        if organization is not None:
            return user, organization, principals_for(actor=user, organization=organization)
        return user, None, []
    return None, None, []


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
        scope["actor"], scope["organization"], scope["principals"] = await _caller(
            raw, scope.get("user"), headers.get("x-organization-id"), scope.get("session"))
        return await self.app(scope, receive, send)


def WebsocketAuthStack(app):  # noqa: N802  (named like Channels' own stacks)
    """Session auth (Channels) wrapped around API-key auth."""
    return AuthMiddlewareStack(APIKeyOrSessionMiddleware(app))
