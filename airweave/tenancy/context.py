"""Request → organization: the one place that decides which organization a caller acts for."""
from __future__ import annotations

from dataclasses import dataclass

from airweave.tenancy.models import APIKey, Membership, OAuthToken, Organization
from airweave.tenancy.oauth import ACCESS_TOKEN_PREFIX, oauth_access_token_authenticate
from airweave.tenancy.services import api_key_authenticate


@dataclass
class APIKeyActor:
    """The caller behind an API key: acts for the key's organization, org-wide."""

    api_key: APIKey
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def organization(self) -> Organization:
        return self.api_key.organization

    @property
    def acting_user(self):
        """The user recorded as author of writes: the key's creator (None for a key without one)."""
        return self.api_key.created_by

    @property
    def email(self) -> str | None:
        return self.api_key.created_by.email if self.api_key.created_by_id else None

    @property
    def pk(self):
        return None


@dataclass
class OAuthActor:
    """The caller behind an OAuth access token: a user acting for the one organization the token
    was granted for on the consent page."""

    token: OAuthToken
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def organization(self) -> Organization:
        return self.token.organization

    @property
    def acting_user(self):
        return self.token.user

    @property
    def email(self) -> str | None:
        return self.token.user.email

    @property
    def pk(self):
        return None


def credential_from_headers(headers) -> str | None:
    """The credential a request carries: `X-API-Key` first, else an `Authorization: Bearer` token.

    `headers` is any case-insensitive mapping of header names (Django's `request.headers`,
    Starlette's `Headers`).
    """
    raw = headers.get("X-API-Key")
    if not raw:
        header = headers.get("Authorization") or ""
        if header.lower().startswith("bearer "):
            raw = header[7:].strip()
    return raw or None


def actor_for_credential(raw: str | None) -> APIKeyActor | OAuthActor | None:
    """The actor behind a credential: an API key (`aw_…`) or an OAuth access token issued by this
    server (`awat_…`). None when the credential is unknown, expired or revoked."""
    raw = (raw or "").strip()
    if raw.startswith(ACCESS_TOKEN_PREFIX):
        token = oauth_access_token_authenticate(raw)
        return OAuthActor(token) if token else None
    api_key = api_key_authenticate(raw) if raw else None
    return APIKeyActor(api_key) if api_key else None


def organization_for_user(user, requested_id: str | None = None) -> Organization | None:
    """The organization a logged-in user acts for: `requested_id` if they belong to it, else their first."""
    memberships = Membership.objects.filter(user=user).select_related("organization").order_by("created_at")
    if requested_id:
        memberships = memberships.filter(organization_id=requested_id)
    first = memberships.first()
    return first.organization if first else None


def organizations_of_user(user) -> list[Organization]:
    """Every organization `user` belongs to, in the order they joined (one query)."""
    return [m.organization for m in
            Membership.objects.filter(user=user).select_related("organization").order_by("created_at")]
