"""Request → organization: the one place that decides which organization a caller acts for."""
from __future__ import annotations

from dataclasses import dataclass

from airweave.tenancy.models import APIKey, Membership, Organization


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
    def email(self) -> str | None:
        return self.api_key.created_by.email if self.api_key.created_by_id else None

    @property
    def pk(self):
        return None


def organization_for_user(user, requested_id: str | None = None) -> Organization | None:
    """The organization a logged-in user acts for: `requested_id` if they belong to it, else their first."""
    memberships = Membership.objects.filter(user=user).select_related("organization").order_by("created_at")
    if requested_id:
        memberships = memberships.filter(organization_id=requested_id)
    first = memberships.first()
    return first.organization if first else None
