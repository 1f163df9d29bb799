"""Who is asking, for which organization, with which role: the one decorator of every UI view.

The organization comes from the session exactly as for the REST API and the account pages
(airweave.tenancy.context.organization_for_user); anything of another organization is looked
up through the caller's organization and so answers 404.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render

from airweave.collections import selectors as collection_selectors
from airweave.collections.access import principals_for
from airweave.tenancy import policies
from airweave.tenancy.context import SESSION_ORGANIZATION_KEY, organization_for_user
from airweave.tenancy.models import Membership
from airweave.tenancy.selectors import membership_of


@dataclass
class Caller:
    """The logged-in user, the organization they act for, their role there and (lazily) their
    access principals."""

    user: object
    organization: object
    role: str | None
    _principals: list | None = None

    @property
    def principals(self) -> list[str] | None:
        """What access control lets this user see (airweave.collections.access.principals_for)."""
        if self._principals is None:
            self._principals = principals_for(actor=self.user, organization=self.organization)
        return self._principals

    @property
    def is_admin(self) -> bool:
        """Admins and owners manage collections, sources and organization keys."""
        return policies.can_see_all_api_keys(self.role)


def ui_view(view):
    """Login required (the allauth session); passes `caller` (a Caller) to the view.

    A user without any organization lands on the account home page, which offers to create one.
    """

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        organization = organization_for_user(request.user, None, request.session.get(SESSION_ORGANIZATION_KEY))
        if organization is None:
            messages.error(request, "Create an organization or accept an invitation first.")
            return redirect("accounts_home")
        membership = membership_of(organization=organization, user=request.user)
        caller = Caller(user=request.user, organization=organization, role=membership.role if membership else None)
        try:
            return view(request, caller, *args, **kwargs)
        except policies.NotAllowed as exc:
            return render_page(request, caller, "ui/forbidden.html", status=403, reason=str(exc))

    return wrapper


def render_page(request, caller: Caller, template: str, status: int = 200, **context):
    """Render a page of the layout with the caller's organization and role."""
    return render(request, template, {"current_organization": caller.organization, "caller": caller,
                                      "roles": Membership.Role, **context}, status=status)


def not_found(what: str = "Not found") -> Http404:
    """The 404 of anything unknown or of another organization."""
    return Http404(what)


def collection_or_404(caller, readable_id: str):
    """The caller's organization's collection `readable_id`; raises Http404 when it has none."""
    collection = collection_selectors.collection_find(organization=caller.organization, readable_id=readable_id)
    if collection is None:
        raise not_found("Collection not found")
    return collection
