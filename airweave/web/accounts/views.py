"""Account pages: small function views that check roles (tenancy.policies) and call tenancy services."""
from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from airweave.tenancy import policies, selectors, services
from airweave.tenancy.context import SESSION_ORGANIZATION_KEY, organization_for_user
from airweave.tenancy.models import APIKey, Invitation, Membership
from airweave.web.accounts.forms import (
    APIKeyForm, InvitationForm, OrganizationForm, RoleForm, SwitchOrganizationForm,
)


def with_organization(view):
    """Log-in required; passes the current organization and the user's membership in it.

    Without any organization the user lands on the home page, which offers to create one.
    """

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        organization = organization_for_user(request.user, None, request.session.get(SESSION_ORGANIZATION_KEY))
        if organization is None:
            messages.error(request, "Create an organization or accept an invitation first.")
            return redirect("accounts_home")
        membership = selectors.membership_of(organization=organization, user=request.user)
        return view(request, organization, membership, *args, **kwargs)

    return wrapper


def _render(request, template, organization=None, status: int = 200, **context):
    return render(request, template, {"current_organization": organization, **context}, status=status)


@login_required
def home(request):
    """Your organizations (switch, create) and the invitations waiting for your address."""
    organization = organization_for_user(request.user, None, request.session.get(SESSION_ORGANIZATION_KEY))
    return _render(request, "accounts/home.html", organization,
                   memberships=selectors.memberships_of_user(request.user),
                   invitations=selectors.invitations_for_email(request.user.email),
                   form=OrganizationForm())


@login_required
@require_POST
def organization_switch(request):
    form = SwitchOrganizationForm(request.POST)
    if not form.is_valid():
        raise Http404("Organization not found")
    organization = organization_for_user(request.user, str(form.cleaned_data["organization_id"]))
    if organization is None:
        raise Http404("Organization not found")
    request.session[SESSION_ORGANIZATION_KEY] = str(organization.pk)
    messages.success(request, f"You now act for {organization.name}.")
    return redirect(_after_switch(request.POST.get("next", "")))


def _after_switch(next_path: str) -> str:
    """Where the switch lands: back to the account page or UI list it came from; a page of one of the
    previous organization's collections would answer 404 in the new one, so those go to the dashboard."""
    if next_path.startswith("/accounts/") and not next_path.startswith("//"):
        return next_path
    if next_path in ("/ui/", "/ui/collections/"):
        return next_path
    if next_path.startswith("/ui/"):
        return "/ui/"
    return "/accounts/"


@login_required
@require_POST
def organization_create(request):
    form = OrganizationForm(request.POST)
    if form.is_valid():
        try:
            organization = services.organization_create(name=form.cleaned_data["name"], owner=request.user)
        except services.TenancyError as exc:
            messages.error(request, str(exc))
        else:
            request.session[SESSION_ORGANIZATION_KEY] = str(organization.pk)
            messages.success(request, f"Organization {organization.name} created; you are its owner.")
    else:
        messages.error(request, "An organization name is 2 to 200 characters long.")
    return redirect("accounts_home")


@with_organization
@require_http_methods(["GET", "POST"])
def members(request, organization, membership):
    """Members and open invitations of the current organization; invite, change roles, remove, revoke."""
    role = membership.role if membership else None
    if request.method == "POST":
        try:
            _members_action(request, organization, membership)
        except policies.NotAllowed as exc:
            messages.error(request, str(exc))
        except services.TenancyError as exc:
            messages.error(request, str(exc))
        except (Membership.DoesNotExist, Invitation.DoesNotExist):
            raise Http404("Not found") from None
        if not selectors.membership_of(organization=organization, user=request.user):
            request.session.pop(SESSION_ORGANIZATION_KEY, None)
            return redirect("accounts_home")
        return redirect("accounts_members")
    return _render(request, "accounts/members.html", organization, membership=membership,
                   members=selectors.membership_list(organization=organization),
                   invitations=selectors.invitation_list(organization=organization) if policies.can_see_all_api_keys(role) else [],
                   invite_form=InvitationForm(), roles=Membership.Role.choices,
                   can_manage=policies.can_see_all_api_keys(role))


def _members_action(request, organization, membership):
    action = request.POST.get("action")
    role = membership.role if membership else None
    if action == "invite":
        form = InvitationForm(request.POST)
        if not form.is_valid():
            raise services.TenancyError("enter a valid email address and role")
        policies.check_invite(role, form.cleaned_data["role"])
        issued = services.invitation_create(organization=organization, email=form.cleaned_data["email"],
                                            role=form.cleaned_data["role"], invited_by=request.user)
        services.invitation_send(issued=issued, accept_url=request.build_absolute_uri(
            reverse("accounts_invitation", args=[issued.token])))
        messages.success(request, f"Invitation sent to {issued.invitation.email}.")
    elif action == "revoke_invitation":
        policies.require_role(role, Membership.Role.ADMIN, "revoking invitations")
        services.invitation_revoke(invitation=selectors.invitation_get(organization=organization,
                                                                       id=request.POST.get("invitation_id")))
        messages.success(request, "Invitation revoked.")
    elif action in ("set_role", "remove"):
        target = selectors.membership_get(organization=organization, id=request.POST.get("membership_id"))
        new_role = None
        if action == "set_role":
            form = RoleForm(request.POST)
            if not form.is_valid():
                raise services.TenancyError("choose owner, admin or member")
            new_role = form.cleaned_data["role"]
        policies.check_membership_change(role, target, new_role, is_self=target.user_id == request.user.pk)
        if new_role:
            services.membership_set_role(membership=target, role=new_role)
            messages.success(request, f"{target.user.email} is now {new_role}.")
        else:
            services.membership_remove(membership=target)
            messages.success(request, f"{target.user.email} left {organization.name}.")
    else:
        raise services.TenancyError("unknown action")


@require_http_methods(["GET", "POST"])
def invitation(request, token):
    """An invitation link: shows the invitation; accepting (POST) needs the invited address logged in."""
    found = services.invitation_find(token)
    if found is None:
        return _render(request, "accounts/invitation.html", invitation=None, status=404)
    if not request.user.is_authenticated:
        return _render(request, "accounts/invitation.html", invitation=found, next=request.path)
    if request.method == "POST":
        try:
            joined = services.invitation_accept(token=token, user=request.user)
        except services.TenancyError as exc:
            messages.error(request, str(exc))
            return redirect("accounts_invitation", token=token)
        request.session[SESSION_ORGANIZATION_KEY] = str(joined.organization_id)
        messages.success(request, f"You joined {joined.organization.name} as {joined.role}.")
        return redirect("accounts_home")
    return _render(request, "accounts/invitation.html", invitation=found,
                   email_matches=found.email.lower() == request.user.email.lower())


@with_organization
@require_http_methods(["GET", "POST"])
def api_keys(request, organization, membership):
    """API keys of the current organization: create (the secret is shown once), rotate, revoke."""
    role = membership.role if membership else None
    own_of = None if policies.can_see_all_api_keys(role) else request.user
    form = APIKeyForm(initial={"user_bound": not policies.can_see_all_api_keys(role)})
    issued = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "create":
                form = APIKeyForm(request.POST)
                if form.is_valid():
                    v = form.cleaned_data
                    policies.check_api_key_create(role, user_bound=v["user_bound"], has_user=True)
                    issued = services.api_key_create(organization=organization, name=v["name"],
                                                     expires_in_days=v["expiration_days"], created_by=request.user,
                                                     user=request.user if v["user_bound"] else None)
                    form = APIKeyForm(initial={"user_bound": v["user_bound"]})
            elif action in ("rotate", "revoke"):
                key = selectors.api_key_get(organization=organization, id=request.POST.get("api_key_id"), own_of=own_of)
                policies.check_api_key_manage(role, key, request.user)
                if action == "rotate":
                    issued = services.api_key_rotate(api_key=key, by=request.user)
                else:
                    services.api_key_revoke(api_key=key, by=request.user)
                    messages.success(request, f"Key aw_{key.prefix} revoked.")
                    return redirect("accounts_api_keys")
        except (policies.NotAllowed, services.TenancyError) as exc:
            messages.error(request, str(exc))
        except (APIKey.DoesNotExist, ValueError):
            raise Http404("API key not found") from None
    response = _render(request, "accounts/api_keys.html", organization, form=form, issued=issued,
                       keys=selectors.api_key_list(organization=organization, own_of=own_of, limit=1000),
                       can_manage_all=own_of is None)
    if issued:
        response["Cache-Control"] = "no-store"  # the page shows a secret once
    return response
