"""API authentication: `X-API-Key: <key>`, else `Authorization: Bearer <API key or OAuth access token>`."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from airweave.oauth.metadata import protected_resource_metadata_url, public_base_url
from airweave.tenancy.context import actor_for_credential, credential_from_headers


class APIKeyAuthentication(authentication.BaseAuthentication):
    """Authenticates with an API key or an OAuth access token issued by this server; `request.user`
    becomes an APIKeyActor or an OAuthActor. Bad credential → 401.

    A key bound to a user, and an OAuth token, make `request.user.user` that user (a user principal).
    """

    def authenticate(self, request):
        raw = credential_from_headers(request.headers)
        if not raw:
            return None
        actor = actor_for_credential(raw)
        if actor is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key or access token.")
        return actor, getattr(actor, "api_key", None) or actor.token

    def authenticate_header(self, request):
        """The 401 challenge; its `resource_metadata` lets OAuth clients find the authorization server."""
        metadata = protected_resource_metadata_url(public_base_url(request.scheme, request.get_host()))
        return f'APIKey realm="api", Bearer resource_metadata="{metadata}"'
