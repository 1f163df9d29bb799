"""The browser authorization flow of a source connection (OAuth 2 with PKCE and bring-your-own client, OAuth 1).

Services: `start_authorization(connection, redirect_uri) -> url`, `claim_authorization`,
`complete_authorization`, `auth_summary`. They write the connection (its credentials through
its credential store) and start the first sync; the protocol underneath is connectors.auth.oauth.

start_authorization → the caller (API client, admin button) gets a *claim URL* on this server.
GET claim URL       → one-time: marks the flow claimed, sets a cookie binding the flow to this
                      browser, redirects to the provider's authorization page.
provider            → redirects the browser to /source-connections/callback?state=&code=
callback            → the state (bound to the connection, single use, unexpired) and the cookie
                      must match; the code is exchanged for tokens (with the PKCE verifier when
                      the provider requires PKCE); the connection becomes active; the browser is
                      sent to the caller's redirect URL.

The pending flow lives encrypted in the connection's credentials, under "_oauth_pending":
only hashes of the claim token, state and browser nonce, the PKCE verifier, OAuth 1's request
token. Claim token and state begin with the connection id, so no table is needed to find it.
Starting a new flow replaces the pending one.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import requests
from django.conf import settings
from django.utils import timezone
from oauthlib.oauth2 import OAuth2Error, WebApplicationClient
from requests_oauthlib import OAuth1Session, OAuth2Session
from requests_oauthlib.oauth1_session import TokenRequestDenied

from airweave.collections.services import source_connection_event_payload
from airweave.crypto import decrypt_json
from airweave.events import publish_domain_event
from connectors.auth.oauth import (TOKEN_FIELDS, TokenEndpointError, client_auth_kwargs, oauth2_session,
                                   request_timeout, token_fields)
from connectors.auth.providers import OAuthProvider, ProviderNotConfigured, get_provider
from connectors.auth.store import ConnectionCredentialStore
from connectors.http.ssrf import guarded_session
from connectors.sync.services import SyncAlreadyRunning, sync_job_start

PENDING_KEY = "_oauth_pending"
BROWSER_COOKIE = "airweave_oauth"


class AuthorizationError(ValueError):
    """A flow that cannot start or finish; `status` is the HTTP status a face should answer.

    `connection` and `redirect_url` are set when the flow was found (its redirect URL is told the error).
    """

    def __init__(self, message: str, status: int = 400, connection=None, redirect_url: str = ""):
        super().__init__(message)
        self.status = status
        self.connection = connection
        self.redirect_url = redirect_url


@dataclass
class CompletedAuthorization:
    """What the callback did: the connection authenticated, and where to send the browser."""

    connection: object
    redirect_url: str


def flow_seconds() -> int:
    return int(getattr(settings, "AIRWEAVE_OAUTH_FLOW_MINUTES", 30)) * 60


def public_url() -> str:
    """The server's public base URL (AIRWEAVE_PUBLIC_URL), without a trailing slash."""
    return (getattr(settings, "AIRWEAVE_PUBLIC_URL", "") or "http://127.0.0.1:8000").rstrip("/")


def default_callback_url() -> str:
    return f"{public_url()}/source-connections/callback"


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _token(connection_id) -> str:
    return f"{connection_id}.{secrets.token_urlsafe(32)}"


def _connection_id_of(token: str):
    try:
        return uuid.UUID((token or "").split(".", 1)[0])
    except ValueError:
        return None


def _locked_connection(token: str, what: str):
    """The SourceConnection named by `token`, locked (call inside transaction.atomic), and its credentials."""
    from airweave.collections.models import SourceConnection

    connection_id = _connection_id_of(token)
    connection = (SourceConnection.objects.select_for_update().filter(pk=connection_id).first()
                  if connection_id else None)
    if connection is None:
        raise AuthorizationError(f"unknown {what}: start the authorization again")
    return connection, decrypt_json(connection.encrypted_credentials)


def start_authorization(connection, redirect_uri: str | None = None, *, callback_url: str | None = None,
                        sync_after: bool = False) -> str:
    """Start the browser flow of `connection`; return the URL to open in the user's browser.

    `redirect_uri`: where the browser goes when the flow ends (`?status=success&source_connection_id=`
    or `?status=error&error=<category>&message=`); None answers the callback with JSON.
    `callback_url`: the OAuth redirect URI registered at the provider (default
    AIRWEAVE_PUBLIC_URL + /source-connections/callback). `sync_after`: start a sync job when
    the flow succeeds. The URL is valid for AIRWEAVE_OAUTH_FLOW_MINUTES (30) and opens once.
    Raises AuthorizationError (status 422) when the source has no OAuth provider entry or no client.
    """
    from airweave.collections.models import SourceConnection
    if redirect_uri and urlsplit(redirect_uri).scheme not in ("http", "https"):
        raise AuthorizationError("redirect_uri must be an http(s) URL", 422)
    try:
        provider = get_provider(connection.short_name)
        credentials = {k: v for k, v in decrypt_json(connection.encrypted_credentials).items() if k != PENDING_KEY}
        client_id, client_secret = provider.client_credentials(credentials)
    except ProviderNotConfigured as exc:
        raise AuthorizationError(str(exc), 422) from None
    callback_url = callback_url or default_callback_url()
    state = _token(connection.id)
    claim = _token(connection.id)
    pending = {"state_hash": _hash(state), "claim_hash": _hash(claim), "expires_at": time.time() + flow_seconds(),
               "callback_url": callback_url, "redirect_url": redirect_uri or "", "sync_after": bool(sync_after),
               "claim_url": f"{public_url()}/source-connections/authorize/{claim}"}
    try:
        if provider.oauth_version == 1:
            pending.update(_oauth1_start(provider, connection.config, client_id, client_secret,
                                         f"{callback_url}?{urlencode({'state': state})}"))
        else:
            pending.update(_oauth2_start(provider, connection.config, client_id, state, callback_url))
    except ProviderNotConfigured as exc:
        raise AuthorizationError(str(exc), 422) from None
    ConnectionCredentialStore(connection.id).save({**credentials, PENDING_KEY: pending})
    SourceConnection.objects.filter(pk=connection.id).exclude(status=SourceConnection.Status.NEEDS_REAUTH).update(
        status=SourceConnection.Status.PENDING_AUTH, is_authenticated=False)
    return pending["claim_url"]


def _oauth2_start(provider: OAuthProvider, config: dict, client_id: str, state: str, callback_url: str) -> dict:
    scope = provider.scope_separator.join(provider.scopes) if provider.scopes else None
    session = OAuth2Session(client_id, redirect_uri=callback_url, scope=scope)
    extra = dict(provider.authorize_params)
    out = {}
    if provider.pkce:
        pkce = WebApplicationClient(client_id)
        verifier = pkce.create_code_verifier(64)
        extra.update(code_challenge=pkce.create_code_challenge(verifier, "S256"), code_challenge_method="S256")
        out["code_verifier"] = verifier
    url, _ = session.authorization_url(provider.url("authorization_url", config), state=state, **extra)
    out["provider_url"] = url
    return out


def _oauth1_start(provider: OAuthProvider, config: dict, key: str, secret: str, callback_url: str) -> dict:
    session = guarded_session(OAuth1Session(key, client_secret=secret, callback_uri=callback_url))
    try:
        token = session.fetch_request_token(provider.url("request_token_url", config), timeout=request_timeout())
    except (TokenRequestDenied, requests.RequestException, ValueError) as exc:
        raise AuthorizationError(f"{provider.name} refused the request token: {exc}", 502) from None
    finally:
        session.close()
    url = OAuth1Session(key, client_secret=secret, resource_owner_key=token["oauth_token"]).authorization_url(
        provider.url("authorization_url", config), **provider.authorize_params)
    return {"provider_url": url, "oauth1_token": token["oauth_token"],
            "oauth1_token_secret": token.get("oauth_token_secret", "")}


def claim_authorization(claim_token: str) -> tuple[str, str]:
    """Open a claim URL (once): return (the provider's authorization URL, a browser nonce for the cookie).

    Raises AuthorizationError: 400 unknown, 410 already opened or expired.
    """
    from django.db import transaction

    with transaction.atomic():
        connection, credentials = _locked_connection(claim_token, "authorization link")
        pending = credentials.get(PENDING_KEY) or {}
        if not pending or not hmac.compare_digest(pending.get("claim_hash", ""), _hash(claim_token)):
            raise AuthorizationError("unknown or replaced authorization link: start the authorization again")
        if pending.get("claimed_at"):
            raise AuthorizationError("this authorization link was already opened; start the authorization again", 410)
        if time.time() > pending["expires_at"]:
            raise AuthorizationError("this authorization link has expired; start the authorization again", 410)
        nonce = secrets.token_urlsafe(24)
        pending.update(claimed_at=time.time(), nonce_hash=_hash(nonce))
        ConnectionCredentialStore(connection.id).save({**credentials, PENDING_KEY: pending})
    return pending["provider_url"], nonce


def complete_authorization(*, state: str, code: str | None = None, browser_nonce: str | None = None,
                           error: str | None = None, error_description: str | None = None,
                           oauth_token: str | None = None, oauth_verifier: str | None = None) -> CompletedAuthorization:
    """Finish the flow at the callback: check state and browser, exchange the code, store the tokens.

    The state is spent whatever happens next (single use). On success the connection is
    active and authenticated, its credentials are the tokens (plus a bring-your-own client),
    and a sync job starts when the flow was started with `sync_after`. Raises
    AuthorizationError (400 bad or spent state, wrong browser, denied by the user or refused
    by the provider; 410 expired; 502 the provider failed), with `connection` set once known;
    the connection then carries error_category "oauth_error" and the message.
    """
    from django.db import transaction

    with transaction.atomic():
        connection, credentials = _locked_connection(state, "state")
        pending = credentials.pop(PENDING_KEY, None) or {}
        if not pending or not hmac.compare_digest(pending.get("state_hash", ""), _hash(state)):
            raise AuthorizationError("unknown, replaced or already used state: start the authorization again")
        # Spend the state now: a replayed callback finds nothing, whatever happens below.
        ConnectionCredentialStore(connection.id).save(credentials)
    try:
        if time.time() > pending["expires_at"]:
            raise AuthorizationError("the authorization expired; start it again", 410)
        if not pending.get("nonce_hash") or not browser_nonce or not hmac.compare_digest(
                pending["nonce_hash"], _hash(browser_nonce)):
            raise AuthorizationError("this browser did not open the authorization link; start the authorization "
                                     "again from the same browser")
        if error:
            raise AuthorizationError(f"the provider answered {error}" + (f": {error_description}"
                                                                           if error_description else ""))
        provider = get_provider(connection.short_name)
        if provider.oauth_version == 1:
            if not oauth_verifier or oauth_token != pending.get("oauth1_token"):
                raise AuthorizationError("the callback lacks oauth_verifier or names another request token")
            tokens = _oauth1_finish(provider, connection.config, credentials, pending, oauth_verifier)
        else:
            if not code:
                raise AuthorizationError("the callback has no code")
            tokens = _oauth2_finish(provider, connection.config, credentials, pending, code)
    except (AuthorizationError, ProviderNotConfigured) as exc:
        status = getattr(exc, "status", 422)
        _flow_failed(connection, str(exc))
        raise AuthorizationError(str(exc), status, connection, pending.get("redirect_url", "")) from None
    _flow_succeeded(connection, {**_client_of(credentials), **tokens}, pending)
    publish_domain_event(connection.organization_id, "source_connection.auth_completed",
                         source_connection_event_payload(connection))
    return CompletedAuthorization(connection=connection, redirect_url=pending.get("redirect_url", ""))


def _client_of(credentials: dict) -> dict:
    return {k: credentials[k] for k in ("client_id", "client_secret", "consumer_key", "consumer_secret")
            if credentials.get(k)}


def _oauth2_finish(provider: OAuthProvider, config: dict, credentials: dict, pending: dict, code: str) -> dict:
    client_id, client_secret = provider.client_credentials(credentials)
    session = oauth2_session(client_id, redirect_uri=pending["callback_url"])
    kwargs = client_auth_kwargs(provider, client_id, client_secret)
    if "auth" not in kwargs:
        kwargs = {"include_client_id": True, **({"client_secret": client_secret} if client_secret else {})}
    if pending.get("code_verifier"):
        kwargs["code_verifier"] = pending["code_verifier"]
    try:
        token = session.fetch_token(provider.url("token_url", config), code=code, timeout=request_timeout(), **kwargs)
    except OAuth2Error as exc:
        raise AuthorizationError(f"{provider.name} refused the authorization code ({exc.error}"
                                 f"{': ' + exc.description if exc.description else ''})") from None
    except (TokenEndpointError, requests.RequestException, ValueError) as exc:
        raise AuthorizationError(f"{provider.name} token endpoint failed: {exc}", 502) from None
    finally:
        session.close()
    if not token.get("access_token"):
        raise AuthorizationError(f"{provider.name} answered no access_token", 502)
    extra = {k: v for k, v in token.items() if k not in ("expires_in",) and k not in TOKEN_FIELDS
             and isinstance(v, (str, int, float, bool, dict, list))}
    return {**extra, **token_fields(token)}


def _oauth1_finish(provider: OAuthProvider, config: dict, credentials: dict, pending: dict, verifier: str) -> dict:
    key, secret = provider.client_credentials(credentials)
    session = guarded_session(OAuth1Session(key, client_secret=secret, resource_owner_key=pending["oauth1_token"],
                                            resource_owner_secret=pending["oauth1_token_secret"], verifier=verifier))
    try:
        token = session.fetch_access_token(provider.url("access_token_url", config), timeout=request_timeout())
    except (TokenRequestDenied, ValueError) as exc:
        raise AuthorizationError(f"{provider.name} refused the verifier: {exc}") from None
    except requests.RequestException as exc:
        raise AuthorizationError(f"{provider.name} access token endpoint failed: {type(exc).__name__}", 502) from None
    finally:
        session.close()
    return {"oauth_token": token["oauth_token"], "oauth_token_secret": token.get("oauth_token_secret", "")}


def _flow_failed(connection, message: str) -> None:
    from airweave.collections.models import SourceConnection

    SourceConnection.objects.filter(pk=connection.pk).update(
        error_category="oauth_error", error_message=message[:2000], is_authenticated=False,
        modified_at=timezone.now())


def _flow_succeeded(connection, credentials: dict, pending: dict) -> None:
    from airweave.collections.models import SourceConnection
    ConnectionCredentialStore(connection.id).save(credentials)
    SourceConnection.objects.filter(pk=connection.pk).update(
        status=SourceConnection.Status.ACTIVE, is_authenticated=True, authenticated_at=timezone.now(),
        error_category="", error_message="", modified_at=timezone.now())
    connection.refresh_from_db()
    if pending.get("sync_after"):
        try:
            sync_job_start(source_connection=connection)
        except SyncAlreadyRunning:
            pass
        connection.refresh_from_db()


def pending_redirect_url(connection) -> str | None:
    """The redirect URL of the connection's last browser flow (None if it had none)."""
    try:
        pending = decrypt_json(connection.encrypted_credentials).get(PENDING_KEY) or {}
    except Exception:  # a key rotated away: no previous flow to learn from
        return None
    return pending.get("redirect_url") or None


def auth_summary(connection) -> dict:
    """The `auth` object of a SourceConnection (docs/api.md): method, authenticated, authenticated_at,
    expires_at (of the access token), and while a browser flow waits: auth_url, auth_url_expires,
    redirect_url. No secret is included."""
    from datetime import datetime, timezone as dt_timezone

    try:
        credentials = decrypt_json(connection.encrypted_credentials)
    except Exception:  # a key rotated away: the connection needs new credentials anyway
        credentials = {}
    out = {"method": connection.auth_method, "authenticated": connection.is_authenticated,
           "authenticated_at": connection.authenticated_at}
    if credentials.get("expires_at"):
        out["expires_at"] = datetime.fromtimestamp(float(credentials["expires_at"]), dt_timezone.utc)
    pending = credentials.get(PENDING_KEY)
    if pending and not pending.get("claimed_at") and time.time() < pending["expires_at"]:
        out["auth_url"] = pending["claim_url"]
        out["auth_url_expires"] = datetime.fromtimestamp(pending["expires_at"], dt_timezone.utc)
        out["redirect_url"] = pending.get("redirect_url") or None
    return out
