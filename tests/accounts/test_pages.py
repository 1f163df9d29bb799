"""The account pages: API keys (shown once, rotate, revoke), members and roles, organization switching."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from airweave.tenancy.models import APIKey, Invitation, Membership, Organization, User
from airweave.tenancy.services import api_key_authenticate, organization_create


def _browser(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def team(db):
    owner = User.objects.create_user("owner@team.example", "pw-123456")
    organization = organization_create(name="Team", owner=owner)
    admin = User.objects.create_user("admin@team.example", "pw-123456")
    member = User.objects.create_user("member@team.example", "pw-123456")
    Membership.objects.create(user=admin, organization=organization, role="admin")
    Membership.objects.create(user=member, organization=organization, role="member")
    return organization, owner, admin, member


def test_api_key_page_shows_a_new_key_once(team):
    organization, _, _, member = team
    browser = _browser(member)
    page = browser.get("/accounts/api-keys")
    assert page.status_code == 200 and 'name="user_bound"' in page.content.decode()
    created = browser.post("/accounts/api-keys", {"action": "create", "name": "laptop", "expiration_days": 30,
                                                  "user_bound": "on"})
    text = created.content.decode()
    key = re.search(r"aw_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", text).group(0)
    assert created["Cache-Control"] == "no-store"
    api_key, membership = api_key_authenticate(key)
    assert api_key.user == member and api_key.name == "laptop" and membership.role == "member"
    assert key not in browser.get("/accounts/api-keys").content.decode()  # never again


def test_a_member_cannot_create_an_organization_wide_key(team):
    organization, _, _, member = team
    response = _browser(member).post("/accounts/api-keys", {"action": "create", "name": "x", "expiration_days": 30},
                                     follow=True)
    assert "needs the admin role" in response.content.decode()
    assert not APIKey.objects.exists()


def test_rotate_and_revoke_from_the_page(team):
    organization, owner, _, _ = team
    browser = _browser(owner)
    browser.post("/accounts/api-keys", {"action": "create", "name": "ci", "expiration_days": 10})
    original = APIKey.objects.get()
    rotated = browser.post("/accounts/api-keys", {"action": "rotate", "api_key_id": str(original.pk)})
    assert "Your new key" in rotated.content.decode()
    original.refresh_from_db()
    assert original.revoked_at is not None
    fresh = APIKey.objects.get(revoked_at=None)
    assert fresh.rotated_from_id == original.pk
    browser.post("/accounts/api-keys", {"action": "revoke", "api_key_id": str(fresh.pk)})
    assert not APIKey.objects.filter(revoked_at=None).exists()


def test_members_cannot_manage_keys_of_others(team):
    organization, owner, _, member = team
    _browser(owner).post("/accounts/api-keys", {"action": "create", "name": "owner", "expiration_days": 10})
    key = APIKey.objects.get()
    response = _browser(member).post("/accounts/api-keys", {"action": "revoke", "api_key_id": str(key.pk)})
    assert response.status_code == 404
    key.refresh_from_db()
    assert key.revoked_at is None


def test_roles_on_the_members_page(team):
    organization, owner, admin, member = team
    target = Membership.objects.get(user=member)
    # A member may not invite or change roles.
    page = _browser(member).post("/accounts/organization/members", {"action": "invite", "email": "x@y.example",
                                                                    "role": "member"}, follow=True)
    assert "needs the admin role" in page.content.decode() and not Invitation.objects.exists()
    # An admin may promote a member to admin, not to owner.
    _browser(admin).post("/accounts/organization/members", {"action": "set_role", "membership_id": target.pk,
                                                           "role": "admin"})
    target.refresh_from_db()
    assert target.role == "admin"
    page = _browser(admin).post("/accounts/organization/members", {"action": "set_role", "membership_id": target.pk,
                                                                  "role": "owner"}, follow=True)
    assert "needs the owner role" in page.content.decode()
    # The last owner cannot leave or be demoted.
    owner_membership = Membership.objects.get(user=owner)
    page = _browser(owner).post("/accounts/organization/members", {"action": "remove",
                                                                  "membership_id": owner_membership.pk}, follow=True)
    assert "last owner" in page.content.decode()
    assert Membership.objects.filter(user=owner, organization=organization).exists()
    # Anyone may leave.
    _browser(member).post("/accounts/organization/members", {"action": "remove", "membership_id": target.pk})
    assert not Membership.objects.filter(user=member).exists()


def test_members_of_another_organization_are_not_reachable(team):
    organization, owner, _, _ = team
    stranger = User.objects.create_user("stranger@else.example", "pw-123456")
    elsewhere = organization_create(name="Elsewhere", owner=stranger)
    theirs = Membership.objects.get(organization=elsewhere)
    response = _browser(owner).post("/accounts/organization/members", {"action": "remove", "membership_id": theirs.pk})
    assert response.status_code == 404
    assert Membership.objects.filter(pk=theirs.pk).exists()


def test_organization_names_are_unique(team):
    organization, owner, _, _ = team
    page = _browser(owner).post("/accounts/organizations/new", {"name": "Team"}, follow=True)
    assert "already exists" in page.content.decode()
    assert Organization.objects.filter(name="Team").count() == 1


def test_pages_need_a_login(db):
    for path in ("/accounts/", "/accounts/api-keys", "/accounts/organization/members"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "\x00", "12345678901234567890123", ""])
def test_malformed_ids_on_the_pages_answer_404(team, bad_id):
    organization, owner, _, _ = team
    browser = _browser(owner)
    for action in ("rotate", "revoke"):
        assert browser.post("/accounts/api-keys", {"action": action, "api_key_id": bad_id}).status_code == 404
    assert browser.post("/accounts/organization/members",
                        {"action": "revoke_invitation", "invitation_id": bad_id}).status_code == 404
    for action in ("set_role", "remove"):
        assert browser.post("/accounts/organization/members",
                            {"action": action, "membership_id": bad_id, "role": "admin"}).status_code == 404
    assert Membership.objects.filter(organization=organization).count() == 3
