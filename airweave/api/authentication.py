"""API key authentication: `X-API-Key: <key>` or `Authorization: Bearer <key>`."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from airweave.tenancy.context import APIKeyActor
from airweave.tenancy.services import api_key_authenticate


class APIKeyAuthentication(authentication.BaseAuthentication):
    """Authenticates with an API key; `request.user` becomes an APIKeyActor. Bad key → 401.

    A key bound to a user makes `request.user.user` that user (a user principal).
    """

    def authenticate(self, request):
        raw = request.META.get("HTTP_X_API_KEY")
        if not raw:
            header = request.META.get("HTTP_AUTHORIZATION", "")
            if header.lower().startswith("bearer "):
                raw = header[7:].strip()
        if not raw:
            return None
        found = api_key_authenticate(raw)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked API key.")
        api_key, membership = found
        return APIKeyActor(api_key, membership), api_key

    def authenticate_header(self, request):
        return 'APIKey realm="api", Bearer'
