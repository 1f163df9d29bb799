"""Request → organization: the one place that decides who a caller is and which organization it acts for.

Callers are a logged-in user (session), an API key, or an OAuth access token issued by this
server (OAuthActor: the user who granted it, for one organization). A key bound to a user acts as
that user: `APIKeyActor.user` is the user, `is_user_principal` is true, so access control
treats it exactly like the user's session. An organization-wide key has no user.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from airweave.tenancy.models import APIKey, Membership, OAuthToken, Organization
from airweave.tenancy.oauth import ACCESS_TOKEN_PREFIX, oauth_access_token_authenticate
from airweave.tenancy.services import api_key_authenticate

SESSION_ORGANIZATION_KEY = "airweave_organization_id"


@dataclass
class APIKeyActor:
    """The caller behind an API key (DRF's `request.user` for key requests).

    `membership` is the bound user's membership in the key's organization (None for an
    organization-wide key); it is loaded when the key is authenticated.
    """

    api_key: APIKey
    membership: Membership | None = None
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_active: bool = field(default=True)

    @property
    def organization(self) -> Organization:
        return self.api_key.organization

    @property
    def user(self):
        """The user this key acts as, or None for an organization-wide key."""
        return self.api_key.user if self.api_key.user_id else None

    @property
    def is_user_principal(self) -> bool:
        """True when the key acts as a user (access control applies to it as to that user)."""
        return self.api_key.user_id is not None

    @property
    def email(self) -> str | None:
        """The bound user's email; for an organization-wide key, its creator's (None if unknown)."""
        if self.api_key.user_id:
            return self.api_key.user.email
        return self.api_key.created_by.email if self.api_key.created_by_id else None

    @property
    def pk(self):
        """The bound user's primary key (None for an organization-wide key)."""
        return self.api_key.user_id


def acting_user(actor):
    """The user to record as `created_by` / `modified_by` for `actor` (a user, an APIKeyActor or None).

    A user-bound key records its user; an organization-wide key the user who created it (or None).
    """
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    if isinstance(actor, APIKeyActor):
        return actor.user or (actor.api_key.created_by if actor.api_key.created_by_id else None)
    if isinstance(actor, OAuthActor):
        return actor.user
    return actor


def actor_role(actor, organization: Organization) -> str | None:
    """The role `actor` holds in `organization`: "owner", "admin", "member" or None (not a member).

    An organization-wide API key holds "admin" (it manages keys and data, never owners); a
    user-bound key holds its user's role.
    """
    if isinstance(actor, APIKeyActor):
        if actor.api_key.organization_id != organization.pk:
            return None
        if not actor.is_user_principal:
            return Membership.Role.ADMIN
        return actor.membership.role if actor.membership else None
    if isinstance(actor, OAuthActor):
        if actor.token.organization_id != organization.pk:
            return None
        actor = actor.user
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return Membership.objects.filter(user=actor, organization=organization).values_list("role", flat=True).first()


def _as_uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
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
    def user(self):
        """The user who granted the token; access control applies to them."""
        return self.token.user

    @property
    def is_user_principal(self) -> bool:
        return True

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
    found = api_key_authenticate(raw) if raw else None
    return APIKeyActor(*found) if found else None


def organization_for_user(user, requested_id: str | None = None, session_id: str | None = None) -> Organization | None:
    """The organization a logged-in user acts for.

    `requested_id` (the X-Organization-ID header) wins and must be one of the user's
    organizations, else None. Without it: the session's current organization if the user
    still belongs to it, else their oldest membership's. None when they belong to none.
    """
    memberships = Membership.objects.filter(user=user).select_related("organization").order_by("created_at")
    if requested_id:
        wanted = _as_uuid(requested_id)
        if wanted is None:
            return None
        first = memberships.filter(organization_id=wanted).first()
        return first.organization if first else None
    if session_id and (wanted := _as_uuid(session_id)):
        current = memberships.filter(organization_id=wanted).first()
        if current:
            return current.organization
    first = memberships.first()
    return first.organization if first else None


def organization_for_request(request) -> Organization | None:
    """The organization of a Django/DRF request whose user is authenticated (see organization_for_user)."""
    user = request.user
    requested = request.headers.get("X-Organization-ID")
    if isinstance(user, (APIKeyActor, OAuthActor)):
        if requested and _as_uuid(requested) != user.organization.pk:
            return None
        return user.organization
    session = getattr(request, "session", None)
    return organization_for_user(user, requested, session.get(SESSION_ORGANIZATION_KEY) if session else None)


def principal_user(actor):
    """The user a caller acts as: the session user, a user-bound key's user; None for an
    organization-wide key or an anonymous caller."""
    if isinstance(actor, (APIKeyActor, OAuthActor)):
        return actor.user
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    return actor


def organizations_of_user(user) -> list[Organization]:
    """Every organization `user` belongs to, in the order they joined (one query)."""
    return [m.organization for m in
            Membership.objects.filter(user=user).select_related("organization").order_by("created_at")]
