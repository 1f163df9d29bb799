"""Every API request acts for exactly one organization; `request.organization` is set here."""
from __future__ import annotations

from rest_framework import exceptions, permissions

from airweave.tenancy.context import APIKeyActor, OAuthActor, organization_for_user


class HasOrganization(permissions.BasePermission):
    """Allows authenticated callers that act for an organization and sets `request.organization`."""

    def has_permission(self, request, view):
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            raise exceptions.NotAuthenticated("Missing credentials: send an X-API-Key header.")
        if isinstance(user, (APIKeyActor, OAuthActor)):
            request.organization = user.organization
        else:
            request.organization = organization_for_user(user, request.headers.get("X-Organization-ID"))
        if request.organization is None:
            raise exceptions.PermissionDenied("You do not belong to any organization (or not to the one asked).")
        return True
