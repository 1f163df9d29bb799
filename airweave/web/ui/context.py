"""Template context of every page: the navigation's organizations, read lazily (one query, only
when a page shows the navigation to a logged-in user)."""
from __future__ import annotations

from django.utils.functional import SimpleLazyObject

from airweave.tenancy import selectors


def navigation(request) -> dict:
    """`nav_memberships`: the logged-in user's memberships (for the organization switch)."""
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return {"nav_memberships": []}
    return {"nav_memberships": SimpleLazyObject(lambda: selectors.memberships_of_user(user))}
