"""Auth objects that a source's HTTP client signs its requests with.

Each is a `requests` auth (called on every prepared request) with two more hooks the client
calls: `ensure_fresh()` before a request (proactive refresh of an expiring token) and
`refresh()` after a 401 (True when new credentials were obtained, so the request is retried
once). A source with an API key returns one of these from `http_auth()`:

    def http_auth(self):
        return BearerAuth(self.credentials["api_key"])

OAuth 2 tokens (`access_token`, `refresh_token?`, `expires_at?` epoch seconds in the
connection's credentials) and OAuth 1 tokens (`oauth_token`, `oauth_token_secret`) need no
code in the source: `BaseSource.http_auth()` builds OAuth2Auth / OAuth1Auth from them.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

import requests
from requests.auth import AuthBase, _basic_auth_str

from connectors.auth.store import CredentialStore, MemoryCredentialStore

logger = logging.getLogger(__name__)

# Refresh an OAuth 2 access token this many seconds before it expires.
REFRESH_MARGIN_SECONDS = 300


class Auth(AuthBase):
    """No credentials; the base of every auth object."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        return request

    def ensure_fresh(self) -> None:
        """Called before each request; refreshes credentials about to expire. May raise AuthFailure."""

    def refresh(self) -> bool:
        """Called once after a 401. True when new credentials were obtained (the request is retried)."""
        return False


NoAuth = Auth


class HeaderAuth(Auth):
    """Fixed headers on every request, e.g. `HeaderAuth({"X-Api-Key": key})`."""

    def __init__(self, headers: dict[str, str]):
        self.headers = dict(headers)

    def __call__(self, request):
        request.headers.update(self.headers)
        return request


def BearerAuth(token: str, scheme: str = "Bearer") -> HeaderAuth:  # noqa: N802 (reads like a class)
    """`Authorization: Bearer <token>` (or another `scheme`, e.g. "token")."""
    return HeaderAuth({"Authorization": f"{scheme} {token}"})


class BasicAuth(HeaderAuth):
    """HTTP basic auth, e.g. Jira Cloud's `BasicAuth(email, api_token)`."""

    def __init__(self, username: str, password: str):
        super().__init__({"Authorization": _basic_auth_str(username, password)})


class QueryAuth(Auth):
    """Credentials as query parameters, e.g. Trello's `QueryAuth({"key": k, "token": t})`."""

    def __init__(self, params: dict[str, str]):
        self.params = dict(params)

    def __call__(self, request):
        request.prepare_url(request.url, self.params)
        return request


class OAuth2Auth(Auth):
    """An OAuth 2 bearer token, refreshed before it expires and once after a 401.

    `credentials`: `{access_token, refresh_token?, expires_at? (epoch seconds), token_type?,
    client_id?, client_secret?}` (the last two for bring-your-own-client connections).
    `scheme` is the word before the token in the Authorization header ("Bearer"; Zoho asks for
    "Zoho-oauthtoken").
    `refresher(credentials) -> dict` returns the new token fields (see
    connectors.auth.oauth.refresh_access_token); it raises AuthFailure("refresh_failed") when the
    provider refuses the refresh token. A rotated refresh token replaces the old one in `store`
    before the new access token is used, inside the store's lock, so concurrent workers never
    spend one refresh token twice: a worker that waited on the lock adopts the token the other
    one obtained.
    """

    def __init__(self, credentials: dict, *, store: CredentialStore | None = None,
                 refresher: Callable[[dict], dict] | None = None, margin: float = REFRESH_MARGIN_SECONDS,
                 clock: Callable[[], float] = time.time):
        self.credentials = dict(credentials)
        self.store = store or MemoryCredentialStore(credentials)
        self.refresher = refresher
        self.margin = margin
        self.clock = clock
        self.scheme = "Bearer"

    def __call__(self, request):
        request.headers["Authorization"] = f"{self.scheme} {self.credentials['access_token']}"
        return request

    def _expiring(self, credentials: dict) -> bool:
        expires_at = credentials.get("expires_at")
        return bool(expires_at) and self.clock() >= float(expires_at) - self.margin

    def ensure_fresh(self) -> None:
        if self._expiring(self.credentials) and self.credentials.get("refresh_token") and self.refresher:
            logger.info("refreshing an OAuth access token before it expires")
            self._refresh()

    def refresh(self) -> bool:
        return self._refresh()

    def _refresh(self) -> bool:
        with self.store.locked() as latest:
            latest = latest or dict(self.credentials)
            if (latest.get("access_token") and latest["access_token"] != self.credentials.get("access_token")
                    and not self._expiring(latest)):
                self.credentials = latest  # another worker refreshed while we waited
                return True
            refresh_token = latest.get("refresh_token") or self.credentials.get("refresh_token")
            if not refresh_token or not self.refresher:
                return False
            fresh = self.refresher({**latest, "refresh_token": refresh_token})
            merged = {**latest, **{k: v for k, v in fresh.items() if v is not None}}
            merged.setdefault("refresh_token", refresh_token)
            if not fresh.get("expires_at"):
                merged.pop("expires_at", None)
            self.store.save(merged)
        self.credentials = merged
        return True


class OAuth1Auth(Auth):
    """OAuth 1.0a signatures (HMAC-SHA1) by requests-oauthlib, e.g. Trello."""

    def __init__(self, *, client_key: str, client_secret: str, resource_owner_key: str, resource_owner_secret: str):
        from requests_oauthlib import OAuth1

        self._oauth1 = OAuth1(client_key, client_secret=client_secret, resource_owner_key=resource_owner_key,
                              resource_owner_secret=resource_owner_secret)

    def __call__(self, request):
        return self._oauth1(request)


def default_auth_for(source) -> Auth:
    """The auth a source gets from its credentials when it does not override `http_auth()`.

    `{access_token, ...}` → OAuth2Auth refreshed through the source's provider entry (when the
    deployment's YAML has one); `{oauth_token, oauth_token_secret}` → OAuth1Auth with the
    connection's (or the deployment's) consumer key; anything else → no auth.
    """
    credentials = source.credentials or {}
    context = source.context
    store = (context.credential_store if context else None) or MemoryCredentialStore(credentials)
    if credentials.get("access_token"):
        return OAuth2Auth(credentials, store=store, refresher=_refresher_for(source))
    if credentials.get("oauth_token") and credentials.get("oauth_token_secret"):
        from connectors.auth.providers import get_provider

        key, secret = get_provider(source.short_name).client_credentials(credentials)
        return OAuth1Auth(client_key=key, client_secret=secret, resource_owner_key=credentials["oauth_token"],
                          resource_owner_secret=credentials["oauth_token_secret"])
    return Auth()


def _refresher_for(source) -> Callable[[dict], dict] | None:
    from connectors.auth.providers import ProviderNotConfigured, get_provider

    try:
        provider = get_provider(source.short_name)
    except ProviderNotConfigured:
        return None

    def refresh(credentials: dict) -> dict:
        from connectors.auth.oauth import refresh_access_token

        return refresh_access_token(provider, credentials, config=source.config)

    return refresh
