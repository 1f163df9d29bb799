"""Reads of tenancy data. Everything of an organization is read through `scoped`."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.utils import timezone

from airweave.tenancy.models import APIKey, Invitation, Membership
from airweave.tenancy.scoping import scoped


def _get(queryset: QuerySet, id):
    """The row of `queryset` with primary key `id`. A malformed id (not a UUID or an integer, as the
    model's key needs; ids come from forms and URLs) is simply not found: raises Model.DoesNotExist."""
    try:
        return queryset.get(pk=id)
    except (ValidationError, ValueError, TypeError, OverflowError):
        raise queryset.model.DoesNotExist(f"{queryset.model.__name__} matching query does not exist.") from None


def _api_keys(organization, own_of=None) -> QuerySet[APIKey]:
    qs = scoped(APIKey, organization).filter(revoked_at=None).select_related("created_by", "modified_by", "user")
    if own_of is not None:
        qs = qs.filter(Q(user_id=own_of.pk) | Q(created_by_id=own_of.pk))
    return qs


def api_key_list(*, organization, own_of=None, skip: int = 0, limit: int = 100) -> list[APIKey]:
    """Keys of `organization` that are not revoked (expired ones included), newest first.

    `own_of` (a user) narrows the list to keys bound to or created by that user. One query.
    """
    return list(_api_keys(organization, own_of).order_by("-created_at")[skip:skip + limit])


def api_key_get(*, organization, id, own_of=None) -> APIKey:
    """Raises APIKey.DoesNotExist for an unknown, revoked or other organization's key (or, with
    `own_of`, one that is not that user's), and for a malformed id."""
    return _get(_api_keys(organization, own_of), id)


def membership_list(*, organization) -> list[Membership]:
    """Members of `organization` with their users, owners first, then by email."""
    order = {Membership.Role.OWNER: 0, Membership.Role.ADMIN: 1, Membership.Role.MEMBER: 2}
    rows = list(scoped(Membership, organization).select_related("user"))
    return sorted(rows, key=lambda m: (order.get(m.role, 3), m.user.email))


def membership_get(*, organization, id) -> Membership:
    """Raises Membership.DoesNotExist for another organization's membership or a malformed id."""
    return _get(scoped(Membership, organization).select_related("user", "organization"), id)


def membership_of(*, organization, user) -> Membership | None:
    return scoped(Membership, organization).filter(user=user).first()


def memberships_of_user(user) -> list[Membership]:
    """The organizations a user belongs to (memberships with their organization), oldest first."""
    return list(Membership.objects.filter(user=user).select_related("organization").order_by("created_at"))


def invitation_list(*, organization) -> list[Invitation]:
    """Open invitations of `organization`, newest first."""
    return list(scoped(Invitation, organization).filter(accepted_at=None, revoked_at=None,
                                                        expires_at__gt=timezone.now()).select_related("invited_by"))


def invitation_get(*, organization, id) -> Invitation:
    """Raises Invitation.DoesNotExist for another organization's invitation or a malformed id."""
    return _get(scoped(Invitation, organization), id)


def invitations_for_email(email: str) -> list[Invitation]:
    """Open invitations sent to `email` (their links are in that mailbox)."""
    return list(Invitation.objects.filter(email__iexact=email, accepted_at=None, revoked_at=None,
                                          expires_at__gt=timezone.now()).select_related("organization"))


def organizations_of_actor(actor, current) -> list[tuple]:
    """(organization, role) pairs the caller may act for, oldest membership first.

    An API key or an OAuth token acts for one organization (`current`); a session user for
    every organization they belong to.
    """
    from airweave.tenancy.context import APIKeyActor, OAuthActor, actor_role

    if isinstance(actor, (APIKeyActor, OAuthActor)):
        return [(current, actor_role(actor, current))]
    return [(m.organization, m.role) for m in memberships_of_user(actor)]
