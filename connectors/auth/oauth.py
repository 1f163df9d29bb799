"""OAuth's protocol: sessions with the SSRF guard, client authentication, token refresh.

`refresh_access_token` is what the auth objects of connectors.auth.tokens call; the browser flow
that writes connections and starts syncs is connectors.authorization, above this module. Token
calls go through requests-oauthlib on sessions with the SSRF guard mounted.
"""
from __future__ import annotations

import logging

import requests
from django.conf import settings
from oauthlib.oauth2 import OAuth2Error
from requests.auth import HTTPBasicAuth
from requests_oauthlib import OAuth2Session

from connectors.auth.providers import OAuthProvider
from connectors.errors import AuthFailure, SourceError
from connectors.http.errors import redact_url
from connectors.http.ssrf import guarded_session

logger = logging.getLogger(__name__)

# Token-endpoint errors that mean the grant is gone for good: the user must authenticate again.
_GRANT_GONE = frozenset({"invalid_grant", "invalid_client", "unauthorized_client", "access_denied"})
TOKEN_FIELDS = ("access_token", "refresh_token", "expires_at", "token_type", "scope")


class TokenEndpointError(SourceError):
    """The token endpoint failed in a way worth another try later (5xx, timeout, garbage)."""

    def __init__(self, message: str):
        super().__init__(message, "token_endpoint_error")


def request_timeout() -> tuple[float, float]:
    return (float(getattr(settings, "AIRWEAVE_HTTP_CONNECT_TIMEOUT", 10)),
            float(getattr(settings, "AIRWEAVE_HTTP_READ_TIMEOUT", 60)))


def raise_on_server_error(response: requests.Response) -> requests.Response:
    if response.status_code >= 500:
        raise TokenEndpointError(f"the token endpoint {redact_url(response.url)} answered HTTP {response.status_code}")
    return response


def oauth2_session(client_id: str, **kwargs) -> OAuth2Session:
    """An OAuth2Session with the SSRF guard mounted and 5xx token answers raised as TokenEndpointError."""
    session = guarded_session(OAuth2Session(client_id, **kwargs))
    session.register_compliance_hook("access_token_response", raise_on_server_error)
    session.register_compliance_hook("refresh_token_response", raise_on_server_error)
    return session


def token_fields(token: dict) -> dict:
    """The token fields the product stores: access_token, refresh_token, expires_at (epoch s), token_type, scope."""
    out = {k: token[k] for k in TOKEN_FIELDS if token.get(k) is not None}
    if isinstance(out.get("scope"), list):
        out["scope"] = " ".join(out["scope"])
    return out


def client_auth_kwargs(provider: OAuthProvider, client_id: str, client_secret: str) -> dict:
    """How the client authenticates at the token endpoint: HTTP basic, or id and secret in the form."""
    if provider.client_auth == "basic":
        return {"auth": HTTPBasicAuth(client_id, client_secret), "include_client_id": False}
    kwargs = {"client_id": client_id}
    if client_secret:
        kwargs["client_secret"] = client_secret
    return kwargs


def refresh_access_token(provider: OAuthProvider, credentials: dict, config: dict | None = None) -> dict:
    """Exchange `credentials["refresh_token"]` for a new token at the provider's token endpoint.

    Returns token_fields() of the answer: a new `refresh_token` when the provider rotates them
    (else the caller keeps the old one), `expires_at` in epoch seconds when the answer has
    `expires_in`. Raises AuthFailure("refresh_failed") when the provider refuses the grant
    (revoked, expired, already rotated away), TokenEndpointError when it fails otherwise.
    """
    client_id, client_secret = provider.client_credentials(credentials)
    token_url = provider.url("token_url", config)
    session = oauth2_session(client_id, token=credentials)
    kwargs = client_auth_kwargs(provider, client_id, client_secret)
    kwargs.pop("include_client_id", None)
    try:
        token = session.refresh_token(token_url, refresh_token=credentials["refresh_token"], timeout=request_timeout(),
                                      **kwargs)
    except OAuth2Error as exc:
        if exc.error in _GRANT_GONE:
            raise AuthFailure(f"{provider.name} refused the refresh token ({exc.error}"
                              f"{': ' + exc.description if exc.description else ''}); authenticate the source "
                              f"connection again", "refresh_failed") from None
        raise TokenEndpointError(f"{provider.name} token refresh failed: {exc.error}") from None
    except (requests.RequestException, ValueError) as exc:
        raise TokenEndpointError(f"{provider.name} token refresh failed: {type(exc).__name__}") from None
    finally:
        session.close()
    if not token.get("access_token"):
        raise TokenEndpointError(f"{provider.name} token refresh answered no access_token")
    logger.info("refreshed an OAuth access token of %s (rotated refresh token: %s)", provider.name,
                bool(token.get("refresh_token")) and token.get("refresh_token") != credentials.get("refresh_token"))
    return token_fields(token)
