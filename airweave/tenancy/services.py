"""Writes for tenancy: organizations, memberships, invitations and API keys.

These services keep the invariants (an organization always has an owner, a user-bound key
belongs to a member, expiry within bounds); who may call them is decided by
airweave/tenancy/policies.py, which the faces check first.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from airweave.tenancy.models import APIKey, Invitation, Membership, Organization, User

API_KEY_DEFAULT_DAYS = 90
API_KEY_MAX_DAYS = 365
INVITATION_DAYS = 7
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TenancyError(ValueError):
    """Bad tenancy input or a broken invariant; `field` names what to fix (None: the request as a whole)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# --- Organizations and memberships ---

def organization_get_or_create(*, name: str) -> Organization:
    """Return the organization called `name`, creating it if needed (operator commands)."""
    org, _ = Organization.objects.get_or_create(name=name)
    return org


def organization_create(*, name: str, owner: User) -> Organization:
    """Create an organization with `owner` as its first owner. Raises TenancyError (bad or taken name)."""
    name = " ".join((name or "").split())
    if not 2 <= len(name) <= 200:
        raise TenancyError("name must be 2 to 200 characters long", "name")
    try:
        with transaction.atomic():
            organization = Organization.objects.create(name=name)
            Membership.objects.create(user=owner, organization=organization, role=Membership.Role.OWNER)
    except IntegrityError:
        raise TenancyError(f"an organization called '{name}' already exists", "name") from None
    return organization


def user_onboard(user: User) -> Organization | None:
    """After sign-up: give a user who belongs nowhere a personal organization that they own.

    A user with an open invitation gets none: they join the inviting organization by
    accepting it. Returns the organization created, or None.
    """
    if Membership.objects.filter(user=user).exists():
        return None
    if Invitation.objects.filter(email__iexact=user.email, accepted_at=None, revoked_at=None,
                                 expires_at__gt=timezone.now()).exists():
        return None
    name, n = user.email, 1
    while Organization.objects.filter(name=name).exists():
        n += 1
        name = f"{user.email} ({n})"
    return organization_create(name=name, owner=user)


def _owner_count(organization: Organization) -> int:
    return Membership.objects.filter(organization=organization, role=Membership.Role.OWNER).count()


def membership_set_role(*, membership: Membership, role: str) -> Membership:
    """Change a member's role. Raises TenancyError for an unknown role or for demoting the last owner."""
    if role not in Membership.Role.values:
        raise TenancyError(f"role must be one of {', '.join(Membership.Role.values)}", "role")
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=membership.organization_id).first()
        if membership.role == Membership.Role.OWNER and role != Membership.Role.OWNER \
                and _owner_count(membership.organization) <= 1:
            raise TenancyError("an organization keeps at least one owner: make someone else owner first", "role")
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def membership_remove(*, membership: Membership) -> None:
    """Remove a user from an organization, with the API keys bound to them there.

    Raises TenancyError when they are its last owner.
    """
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=membership.organization_id).first()
        if membership.role == Membership.Role.OWNER and _owner_count(membership.organization) <= 1:
            raise TenancyError("the last owner cannot leave: make someone else owner first")
        APIKey.objects.filter(organization_id=membership.organization_id, user_id=membership.user_id,
                              revoked_at=None).update(revoked_at=timezone.now())
        membership.delete()


# --- Invitations ---

@dataclass(frozen=True)
class IssuedInvitation:
    """An invitation as created: `token` goes in the emailed link and is never stored."""

    invitation: Invitation
    token: str


def invitation_create(*, organization: Organization, email: str, role: str = Membership.Role.MEMBER,
                      invited_by: User | None = None, days: int = INVITATION_DAYS) -> IssuedInvitation:
    """Invite `email` to `organization` with `role`; replaces an open invitation of the same email.

    Raises TenancyError for a bad email or role, or when the person is already a member.
    The caller sends the link with invitation_send.
    """
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    email = (email or "").strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise TenancyError("enter a valid email address", "email") from None
    if role not in Membership.Role.values:
        raise TenancyError(f"role must be one of {', '.join(Membership.Role.values)}", "role")
    if Membership.objects.filter(organization=organization, user__email__iexact=email).exists():
        raise TenancyError(f"{email} is already a member of {organization.name}", "email")
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        Invitation.objects.filter(organization=organization, email=email, accepted_at=None, revoked_at=None) \
            .update(revoked_at=now)
        invitation = Invitation.objects.create(organization=organization, email=email, role=role,
                                               token_hash=_digest(token), invited_by=invited_by,
                                               expires_at=now + timedelta(days=days))
    return IssuedInvitation(invitation=invitation, token=token)


def invitation_send(*, issued: IssuedInvitation, accept_url: str) -> None:
    """Email the invitation link `accept_url` (which carries the token) to the invited address.

    Sent through Django's email backend (EMAIL_URL: the console in development, SMTP in
    production). The token appears only in the message, never in logs.
    """
    from django.conf import settings
    from django.core.mail import send_mail
    from django.template.loader import render_to_string

    invitation = issued.invitation
    context = {"invitation": invitation, "organization": invitation.organization, "accept_url": accept_url,
               "inviter": invitation.invited_by}
    subject = " ".join(render_to_string("tenancy/email/invitation_subject.txt", context).split())
    body = render_to_string("tenancy/email/invitation_message.txt", context)
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [invitation.email])


def invitation_find(token: str) -> Invitation | None:
    """The open invitation whose link carries `token` (one indexed lookup by digest), else None."""
    if not token or len(token) > 200:
        return None
    invitation = Invitation.objects.select_related("organization", "invited_by") \
        .filter(token_hash=_digest(token)).first()
    return invitation if invitation and invitation.is_open() else None


def invitation_accept(*, token: str, user: User) -> Membership:
    """Accept the invitation of `token` as `user`: they join its organization with its role.

    Raises TenancyError when the invitation is unknown, used, revoked or expired, or was sent
    to another email address. A user who is already a member keeps the higher of both roles.
    """
    invitation = invitation_find(token)
    if invitation is None:
        raise TenancyError("this invitation is invalid, expired or already used")
    if invitation.email.lower() != user.email.lower():
        raise TenancyError(f"this invitation was sent to {invitation.email}; log in with that address to accept it")
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(
            user=user, organization=invitation.organization, defaults={"role": invitation.role})
        if not created and Membership.RANK[invitation.role] > Membership.RANK[membership.role]:
            membership.role = invitation.role
            membership.save(update_fields=["role"])
        Invitation.objects.filter(pk=invitation.pk).update(accepted_at=timezone.now(), accepted_by=user)
    return membership


def invitation_revoke(*, invitation: Invitation) -> None:
    """Withdraw an invitation; its link stops working. Idempotent."""
    if invitation.revoked_at is None and invitation.accepted_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])


# --- API keys ---

@dataclass(frozen=True)
class IssuedAPIKey:
    """An API key as issued: `key` is the full secret, shown once and never stored."""

    api_key: APIKey
    key: str


def _expiry(expires_in_days: int | None):
    if expires_in_days is None:
        return None
    if isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int) \
            or not 1 <= expires_in_days <= API_KEY_MAX_DAYS:
        raise TenancyError(f"expiration_days must be an integer from 1 to {API_KEY_MAX_DAYS}", "expiration_days")
    return timezone.now() + timedelta(days=expires_in_days)


def api_key_create(*, organization: Organization, name: str = "", expires_in_days: int | None = API_KEY_DEFAULT_DAYS,
                   created_by: User | None = None, user: User | None = None, rotated_from: APIKey | None = None) -> IssuedAPIKey:
    """Create an API key for `organization`; the returned `key` is the only copy of the secret.

    `user` binds the key to a member (it acts as them); None makes it organization-wide.
    `expires_in_days` is 1..365 (None: no expiry, for operators only). Raises TenancyError.
    """
    expires_at = _expiry(expires_in_days)
    if user is not None and not Membership.objects.filter(user=user, organization=organization).exists():
        raise TenancyError(f"{user.email} is not a member of {organization.name}", "user")
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    api_key = APIKey.objects.create(
        organization=organization, user=user, name=(name or "")[:200], prefix=prefix, secret_hash=_digest(secret),
        expires_at=expires_at, created_by=created_by, modified_by=created_by, rotated_from=rotated_from,
    )
    return IssuedAPIKey(api_key=api_key, key=f"aw_{prefix}_{secret}")


def api_key_revoke(*, api_key: APIKey, by: User | None = None) -> APIKey:
    """Revoke a key: it stops authenticating at once. Idempotent."""
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.modified_by = by or api_key.modified_by
        api_key.save(update_fields=["revoked_at", "modified_by", "modified_at"])
    return api_key


def api_key_rotate(*, api_key: APIKey, by: User | None = None,
                   expires_in_days: int | None = API_KEY_DEFAULT_DAYS) -> IssuedAPIKey:
    """Replace a key by a new one with the same name, organization and user; the old one is revoked.

    The new key's secret is returned once; it expires `expires_in_days` from now (1..365).
    Raises TenancyError for a revoked or expired key (create a new one instead).
    """
    with transaction.atomic():
        current = APIKey.objects.select_for_update().get(pk=api_key.pk)
        if not current.is_usable():
            raise TenancyError("this key is revoked or expired: create a new key instead")
        issued = api_key_create(organization=current.organization, name=current.name, expires_in_days=expires_in_days,
                                created_by=by or current.created_by, user=current.user, rotated_from=current)
        api_key_revoke(api_key=current, by=by)
    api_key.refresh_from_db()
    return issued


def api_key_authenticate(raw_key: str) -> tuple[APIKey, Membership | None] | None:
    """The usable key for `raw_key` (`aw_<prefix>_<secret>`) and its bound user's membership, or None.

    One indexed lookup by prefix (the membership comes in the same query), then a
    constant-time comparison of the secret's digest; never a scan of the keys. A user-bound
    key stops working when its user is inactive or no longer a member. Records
    `last_used_at` at most once a minute.
    """
    parts = (raw_key or "").strip().split("_", 2)
    if len(parts) != 3 or parts[0] != "aw" or not parts[1] or len(parts[1]) > 16:
        return None
    _, prefix, secret = parts
    memberships = Membership.objects.filter(user=OuterRef("user"), organization=OuterRef("organization"))
    api_key = (APIKey.objects.select_related("organization", "user", "created_by")
               .annotate(member_role=Subquery(memberships.values("role")[:1]), is_member=Exists(memberships))
               .filter(prefix=prefix).first())
    if api_key is None or not hmac.compare_digest(api_key.secret_hash, _digest(secret)):
        return None
    now = timezone.now()
    if not api_key.is_usable(now):
        return None
    membership = None
    if api_key.user_id:
        if not api_key.is_member or not api_key.user.is_active:
            return None
        membership = Membership(user=api_key.user, organization=api_key.organization, role=api_key.member_role)
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        APIKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key, membership
