"""GET /health, /health/live, /health/ready (no credentials), /organizations and /users/me (issue 12)."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from airweave.health import Check
from airweave.tenancy.models import Membership, User
from airweave.tenancy.services import api_key_create, organization_get_or_create


def test_health_and_liveness_need_no_credentials():
    anonymous = APIClient()
    assert anonymous.get("/health").json() == {"status": "healthy"}
    assert anonymous.get("/health/live/").json() == {"status": "alive"}


@pytest.mark.django_db
def test_readiness_checks_the_database():
    r = APIClient().get("/health/ready")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["status"] == "ready" and body["checks"]["database"]["ok"] is True
    assert body["checks"]["pgvector"]["ok"] is True


def test_readiness_answers_503_naming_what_is_wrong(monkeypatch):
    """A database that cannot be reached (the check's own finding, as `doctor` prints it)."""
    monkeypatch.setattr("airweave.api.views.health.check_database", lambda: [Check(
        "database", False, "embedded PostgreSQL in .data/pg: cannot connect (connection refused)",
        "see the server log in .data/pg/log, or `make stop-db` and run again")])
    r = APIClient().get("/health/ready")
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "not_ready" and "cannot connect" in body["detail"] and "make stop-db" in body["detail"]


def test_organizations_of_an_api_key_is_its_one_organization(client, org):
    r = client.get("/organizations/")
    assert r.status_code == 200
    assert r.json() == [{"id": str(org.id), "name": org.name, "description": None,
                         "created_at": r.json()[0]["created_at"], "modified_at": r.json()[0]["modified_at"],
                         "role": "admin", "is_primary": True}]


@pytest.mark.django_db
def test_a_session_user_sees_each_of_their_organizations_and_users_me():
    user = User.objects.create_user(email="ada@example.com", password="pw-123456789", full_name="Ada")
    first, second = organization_get_or_create(name="First org"), organization_get_or_create(name="Second org")
    Membership.objects.create(user=user, organization=first, role="owner")
    Membership.objects.create(user=user, organization=second, role="member")
    browser = APIClient()
    browser.force_login(user)
    orgs = browser.get("/organizations", HTTP_X_ORGANIZATION_ID=str(second.id)).json()
    assert [(o["name"], o["role"], o["is_primary"]) for o in orgs] == [("First org", "owner", False),
                                                                       ("Second org", "member", True)]
    me = browser.get("/users/me", HTTP_X_ORGANIZATION_ID=str(second.id)).json()
    assert me["email"] == "ada@example.com" and me["full_name"] == "Ada" and me["primary_organization_id"] == str(second.id)
    assert [(u["organization"]["name"], u["role"]) for u in me["user_organizations"]] == [("First org", "owner"),
                                                                                         ("Second org", "member")]
    # an organization-wide key answers as the user who created it
    keyed = APIClient()
    keyed.credentials(HTTP_X_API_KEY=api_key_create(organization=first, name="k", created_by=user).key)
    me = keyed.get("/users/me").json()
    assert me["email"] == "ada@example.com" and me["primary_organization_id"] == str(first.id)
    assert [u["role"] for u in me["user_organizations"]] == ["owner", "member"]


def test_users_me_of_a_key_without_any_user_is_a_json_404(client):
    r = client.get("/users/me")
    assert r.status_code == 404 and "no user" in r.json()["detail"]
