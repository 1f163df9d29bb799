"""Who may do what inside an organization. Faces (REST, web pages) check these before calling a service.

Roles rank member < admin < owner. An organization-wide API key acts as an admin; a
user-bound key acts with its user's role (see airweave.tenancy.context.actor_role).
Every check raises NotAllowed with a message saying what is missing; objects of another
organization never reach these checks (their selectors answer "not found").
"""
from __future__ import annotations

from airweave.tenancy.models import APIKey, Membership

Role = Membership.Role


class NotAllowed(PermissionError):
    """The caller's role does not allow the action (HTTP 403 with this message)."""


def _rank(role: str | None) -> int:
    return Membership.RANK.get(role, -1) if role else -1


def require_role(role: str | None, at_least: str, action: str) -> None:
    """Raise NotAllowed unless `role` is `at_least` or higher."""
    if _rank(role) < _rank(at_least):
        raise NotAllowed(f"{action} needs the {at_least} role or higher in this organization")


def can_see_all_api_keys(role: str | None) -> bool:
    """Admins and owners see every key of the organization; members see their own."""
    return _rank(role) >= _rank(Role.ADMIN)


def api_key_is_own(api_key: APIKey, user) -> bool:
    """A key is a user's own when it is bound to them or they created it."""
    return user is not None and user.pk is not None and user.pk in (api_key.user_id, api_key.created_by_id)


def check_api_key_create(role: str | None, *, user_bound: bool, has_user: bool) -> None:
    """Members may create keys bound to themselves; organization-wide keys need admin.

    `has_user` tells whether the caller is a user (a session, or a key bound to a user).
    """
    if role is None:
        raise NotAllowed("you are not a member of this organization")
    if user_bound and not has_user:
        raise NotAllowed("an organization-wide key has no user to bind a new key to; set user_bound to false")
    if not user_bound:
        require_role(role, Role.ADMIN, "creating an organization-wide API key")


def check_api_key_manage(role: str | None, api_key: APIKey, user) -> None:
    """Revoking or rotating a key: admins any key of the organization, members their own."""
    if can_see_all_api_keys(role):
        return
    if role is None or not api_key_is_own(api_key, user):
        raise NotAllowed("members may manage only their own API keys")


def check_invite(role: str | None, invited_role: str) -> None:
    """Admins invite members and admins; only owners invite owners."""
    require_role(role, Role.ADMIN, "inviting people")
    if invited_role == Role.OWNER:
        require_role(role, Role.OWNER, "inviting an owner")


def check_membership_change(role: str | None, target: Membership, new_role: str | None, *, is_self: bool) -> None:
    """Changing a role (`new_role`) or removing a member (`new_role` None).

    Anyone may leave; admins manage members and admins; only owners touch owners or make owners.
    """
    if is_self and new_role is None:
        return
    require_role(role, Role.ADMIN, "managing members")
    if target.role == Role.OWNER or new_role == Role.OWNER:
        require_role(role, Role.OWNER, "changing an owner or making one")
