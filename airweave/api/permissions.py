"""Every API request acts for exactly one organization; `request.organization` is set here."""
from __future__ import annotations

from rest_framework import exceptions, permissions

from airweave.collections.access import principals_for
from airweave.tenancy.context import organization_for_request


class HasOrganization(permissions.BasePermission):
    """Allows authenticated callers that act for an organization and sets `request.organization`.

    A session user picks one of their organizations with `X-Organization-ID` (else the one
    chosen in the web pages, else their first). An organization the caller does not belong to
    answers 404, like anything else of another organization.
    """

    def has_permission(self, request, view):
        user = request.user
        if user is None or not getattr(user, "is_authenticated", False):
            raise exceptions.NotAuthenticated("Missing credentials: send an X-API-Key header.")
        request.organization = organization_for_request(request)
        if request.organization is None:
            if request.headers.get("X-Organization-ID"):
                raise exceptions.NotFound("Organization not found: X-Organization-ID is not one of your organizations")
            raise exceptions.PermissionDenied("You do not belong to any organization yet: create one or accept an "
                                              "invitation at /accounts/")
        return True


def request_principals(request) -> list[str] | None:
    """The principals that restrict what the caller of `request` sees (after HasOrganization).

    None for an organization-wide API key; the user's principals otherwise (see
    airweave.collections.access.principals_for). Computed once per request.
    """
    if not hasattr(request, "_principals"):
        request._principals = principals_for(actor=request.user, organization=request.organization)
    return request._principals


class NoAPIKeyChangesByOAuth(permissions.BasePermission):
    """Refuses creating, rotating and revoking API keys with an OAuth access token.

    A token is granted to a client on the consent page for searching and reading as its user; a
    key it minted would outlive the revocation of that grant. Reading keys stays allowed.
    """

    message = ("An OAuth access token cannot create, rotate or revoke API keys: use your session at "
               "/accounts/ or an API key.")

    def has_permission(self, request, view):
        from airweave.tenancy.context import OAuthActor

        return request.method in permissions.SAFE_METHODS or not isinstance(request.user, OAuthActor)
