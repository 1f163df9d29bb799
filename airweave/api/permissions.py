"""Every API request acts for exactly one organization; `request.organization` is set here."""
from __future__ import annotations

from rest_framework import exceptions, permissions

from airweave.collections.access import principals_for
from airweave.tenancy.context import APIKeyActor, organization_for_user


class HasOrganization(permissions.BasePermission):
    """Allows authenticated callers that act for an organization and sets `request.organization`."""

    def has_permission(self, request, view):
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            raise exceptions.NotAuthenticated("Missing credentials: send an X-API-Key header.")
        if isinstance(user, APIKeyActor):
            request.organization = user.organization
        else:
            request.organization = organization_for_user(user, request.headers.get("X-Organization-ID"))
        if request.organization is None:
            raise exceptions.PermissionDenied("You do not belong to any organization (or not to the one asked).")
        return True


def request_principals(request) -> list[str] | None:
    """The principals that restrict what the caller of `request` sees (after HasOrganization).

    None for an organization-wide API key; the user's principals otherwise (see
    airweave.collections.access.principals_for). Computed once per request.
    """
    if not hasattr(request, "_principals"):
        request._principals = principals_for(actor=request.user, organization=request.organization)
    return request._principals
