"""Writes and reads of the OAuth credentials this server issues: clients, codes and tokens.

The protocol itself (parsing requests, PKCE, client authentication, error responses) is the
OAuth library's job, in `airweave/oauth/`; this module only stores and looks up what it issues.
Every secret is stored as its SHA-256 digest (client secrets, authorization codes, access and
refresh tokens), and every code and token acts for exactly one organization.

Token shapes: access tokens read `awat_<secret>`, refresh tokens `awrt_<secret>` (API keys read
`aw_<prefix>_<secret>`), so one `Authorization: Bearer` header tells them apart without a lookup.
"""
from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from airweave.tenancy.models import Membership, OAuthAuthorizationCode, OAuthClient, OAuthToken, Organization, User

ACCESS_TOKEN_PREFIX = "awat_"
REFRESH_TOKEN_PREFIX = "awrt_"
CLIENT_ID_PREFIX = "awc_"
CODE_SECONDS = 600  # RFC 6749 §4.1.2 recommends at most 10 minutes
UNUSED_CLIENT_HOURS = 24  # a registration never used to obtain a token expires after a day
PURGE_BATCH = 1000


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_access_token(**_) -> str:
    """A fresh access token string (the OAuth library's token generator calls this)."""
    return ACCESS_TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_refresh_token(**_) -> str:
    """A fresh refresh token string."""
    return REFRESH_TOKEN_PREFIX + secrets.token_urlsafe(32)


def access_token_seconds() -> int:
    return int(settings.AIRWEAVE_OAUTH_ACCESS_TOKEN_SECONDS)


# --- clients (RFC 7591) -----------------------------------------------------------------------

@dataclass(frozen=True)
class IssuedOAuthClient:
    """A registration as issued: `client_secret` is the only copy of the secret (None for public clients)."""

    client: OAuthClient
    client_secret: str | None


def oauth_client_register(*, client_name: str, redirect_uris: list[str], grant_types: list[str],
                          response_types: list[str], token_endpoint_auth_method: str, scope: str,
                          metadata: dict) -> IssuedOAuthClient:
    """Register a client whose metadata the caller has validated. Also purges expired registrations.

    The registration expires after UNUSED_CLIENT_HOURS unless a token is issued to it; each token
    issued extends it by AIRWEAVE_OAUTH_CLIENT_IDLE_DAYS.
    """
    oauth_purge_expired()
    secret = None if token_endpoint_auth_method == "none" else secrets.token_urlsafe(32)
    client = OAuthClient.objects.create(
        client_id=CLIENT_ID_PREFIX + secrets.token_urlsafe(24), secret_hash=_digest(secret) if secret else "",
        client_name=client_name, redirect_uris=redirect_uris, grant_types=grant_types, response_types=response_types,
        token_endpoint_auth_method=token_endpoint_auth_method, scope=scope, metadata=metadata,
        expires_at=timezone.now() + timedelta(hours=UNUSED_CLIENT_HOURS),
    )
    return IssuedOAuthClient(client=client, client_secret=secret)


def oauth_client_get(client_id: str | None) -> OAuthClient | None:
    """The registration with `client_id`, or None when unknown or expired."""
    if not client_id:
        return None
    return OAuthClient.objects.filter(client_id=client_id, expires_at__gt=timezone.now()).first()


def oauth_purge_expired(now=None) -> int:
    """Delete expired registrations (with their tokens) and codes, at most PURGE_BATCH of each. Returns the count."""
    now = now or timezone.now()
    clients = list(OAuthClient.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:PURGE_BATCH])
    codes = list(OAuthAuthorizationCode.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:PURGE_BATCH])
    deleted = OAuthClient.objects.filter(pk__in=clients).delete()[0] if clients else 0
    deleted += OAuthAuthorizationCode.objects.filter(pk__in=codes).delete()[0] if codes else 0
    return deleted


# --- authorization codes ----------------------------------------------------------------------

def oauth_code_issue(*, code: str, client: OAuthClient, user: User, organization: Organization, redirect_uri: str,
                     scope: str, resource: str, code_challenge: str) -> OAuthAuthorizationCode:
    """Store the digest of a new authorization code (valid CODE_SECONDS, S256 PKCE)."""
    return OAuthAuthorizationCode.objects.create(
        code_hash=_digest(code), client=client, user=user, organization=organization, redirect_uri=redirect_uri,
        scope=scope, resource=resource or "", code_challenge=code_challenge, code_challenge_method="S256",
        expires_at=timezone.now() + timedelta(seconds=CODE_SECONDS),
    )


def oauth_code_redeem(code: str, client: OAuthClient) -> OAuthAuthorizationCode | None:
    """Mark the code as redeemed and return it, or None when unknown, expired, another client's, or
    already redeemed. A second redemption also revokes every token the first one yielded.

    Atomic: of two concurrent redemptions exactly one succeeds.
    """
    now = timezone.now()
    row = (OAuthAuthorizationCode.objects.select_related("user", "organization")
           .filter(code_hash=_digest(code), client=client).first())
    if row is None:
        return None
    if row.redeemed_at is not None:
        oauth_family_revoke(row.family)
        return None
    won = OAuthAuthorizationCode.objects.filter(pk=row.pk, redeemed_at__isnull=True, expires_at__gt=now).update(
        redeemed_at=now)
    if not won:
        return None
    row.redeemed_at = now
    return row


# --- tokens -----------------------------------------------------------------------------------

def oauth_token_save(*, client: OAuthClient, user: User, organization: Organization, access_token: str,
                     refresh_token: str | None, expires_in: int, scope: str = "", resource: str = "",
                     family: uuid.UUID | None = None) -> OAuthToken:
    """Store the digests of newly issued tokens and extend the client's registration."""
    now = timezone.now()
    refresh_days = int(settings.AIRWEAVE_OAUTH_REFRESH_TOKEN_DAYS)
    token = OAuthToken.objects.create(
        family=family or uuid.uuid4(), client=client, user=user, organization=organization,
        access_token_hash=_digest(access_token), refresh_token_hash=_digest(refresh_token) if refresh_token else None,
        scope=scope or "", resource=resource or "", issued_at=now, access_expires_at=now + timedelta(seconds=expires_in),
        refresh_expires_at=now + timedelta(days=refresh_days) if refresh_token else None,
    )
    idle_days = int(settings.AIRWEAVE_OAUTH_CLIENT_IDLE_DAYS)
    OAuthClient.objects.filter(pk=client.pk).update(expires_at=now + timedelta(days=max(idle_days, refresh_days)))
    return token


def oauth_refresh_token_redeem(refresh_token: str, client: OAuthClient) -> OAuthToken | None:
    """Rotate: revoke the token row of `refresh_token` and return it (its user, organization,
    scope and family carry over to the new tokens), or None when unknown, expired or another
    client's. A refresh token that was already rotated or revoked revokes its whole family.

    Atomic: of two concurrent refreshes with one token exactly one succeeds.
    """
    now = timezone.now()
    row = (OAuthToken.objects.select_related("user", "organization")
           .filter(refresh_token_hash=_digest(refresh_token), client=client).first())
    if row is None:
        return None
    if row.revoked_at is not None:
        oauth_family_revoke(row.family)
        return None
    if row.refresh_expires_at is None or row.refresh_expires_at <= now:
        return None
    if not OAuthToken.objects.filter(pk=row.pk, revoked_at__isnull=True).update(revoked_at=now):
        oauth_family_revoke(row.family)
        return None
    if not _is_member(row.user_id, row.organization_id) or not row.user.is_active:
        return None
    row.revoked_at = now
    return row


def oauth_token_find(token: str) -> OAuthToken | None:
    """The token row of an access or refresh token string (revoked or not), or None.

    The prefix tells the two kinds apart, so a wrong `token_type_hint` (RFC 7009) costs nothing.
    """
    digest = _digest(token)
    if token.startswith(ACCESS_TOKEN_PREFIX):
        return OAuthToken.objects.filter(access_token_hash=digest).select_related("client").first()
    if token.startswith(REFRESH_TOKEN_PREFIX):
        return OAuthToken.objects.filter(refresh_token_hash=digest).select_related("client").first()
    return None


def oauth_family_revoke(family: uuid.UUID) -> int:
    """Revoke every token of one grant (the original and all its rotations). Returns the count revoked."""
    return OAuthToken.objects.filter(family=family, revoked_at__isnull=True).update(revoked_at=timezone.now())


def oauth_token_revoke(token: OAuthToken) -> None:
    """Revoke a token, its refresh token and every other token of the same grant (RFC 7009 §2.1)."""
    oauth_family_revoke(token.family)


def _is_member(user_id, organization_id) -> bool:
    return Membership.objects.filter(user_id=user_id, organization_id=organization_id).exists()


def oauth_access_token_authenticate(raw: str) -> OAuthToken | None:
    """Return the usable token row for an access token string (`awat_…`), or None.

    Usable: known, not revoked, not expired, its user active and still a member of the token's
    organization. One indexed query. Records `last_used_at` at most once a minute.
    """
    raw = (raw or "").strip()
    if not raw.startswith(ACCESS_TOKEN_PREFIX):
        return None
    now = timezone.now()
    membership = Membership.objects.filter(user_id=OuterRef("user_id"), organization_id=OuterRef("organization_id"))
    token = (OAuthToken.objects.select_related("organization", "user")
             .filter(access_token_hash=_digest(raw), revoked_at__isnull=True, access_expires_at__gt=now,
                     user__is_active=True)
             .filter(Exists(membership)).first())
    if token is None:
        return None
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        OAuthToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
