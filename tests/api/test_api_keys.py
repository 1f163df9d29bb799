"""/api-keys: create (shown once), list, get, revoke, rotate; expiry; user-bound keys act as their user."""
from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from airweave.tenancy.context import APIKeyActor
from airweave.tenancy.models import APIKey, Membership, User
from airweave.tenancy.services import api_key_authenticate, api_key_create, membership_remove

FIELDS = {"id", "organization_id", "name", "key_prefix", "user_id", "user_email", "created_at", "modified_at",
          "last_used_date", "expiration_date", "created_by_email", "modified_by_email"}


def _member(org, email, role):
    user = User.objects.create_user(email, "pw-123456")
    Membership.objects.create(user=user, organization=org, role=role)
    return user


def _session(user):
    api = APIClient()
    api.force_login(user)
    return api


def _with_key(key):
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=key)
    return api


@pytest.fixture
def owner(org):
    return _member(org, "owner@acme.example", Membership.Role.OWNER)


@pytest.fixture
def member(org):
    return _member(org, "member@acme.example", Membership.Role.MEMBER)


def test_create_shows_the_key_once_and_stores_only_a_digest(client, org):
    response = client.post("/api-keys", {"name": "ci"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == FIELDS | {"decrypted_key"}
    key = body["decrypted_key"]
    assert key.startswith(body["key_prefix"] + "_") and body["key_prefix"].startswith("aw_")
    assert body["organization_id"] == str(org.id) and body["name"] == "ci" and body["user_id"] is None
    row = APIKey.objects.get(pk=body["id"])
    secret = key.split("_", 2)[2]
    assert row.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in str(APIKey.objects.filter(pk=row.pk).values().first())
    # Never shown again.
    assert "decrypted_key" not in client.get(f"/api-keys/{row.id}").json()
    assert all("decrypted_key" not in k for k in client.get("/api-keys").json())
    # The new key works.
    assert _with_key(key).get("/collections/count").status_code == 200


def test_default_expiry_is_90_days_and_bounds_are_1_to_365(client):
    body = client.post("/api-keys", {}, format="json").json()
    row = APIKey.objects.get(pk=body["id"])
    assert timedelta(days=89, hours=23) < row.expires_at - row.created_at <= timedelta(days=90, minutes=1)
    one_year = client.post("/api-keys", {"expiration_days": 365}, format="json")
    assert one_year.status_code == 201
    for bad in (0, 366, -1, "soon", 1.5):
        response = client.post("/api-keys", {"expiration_days": bad}, format="json")
        assert response.status_code == 422, (bad, response.content)
        assert response.json()["detail"][0]["loc"] == ["body", "expiration_days"]
    # null is "not given" (the default, 90 days), and an unknown field is ignored and named (issue 12)
    assert client.post("/api-keys", {"expiration_days": None}, format="json").status_code == 201
    response = client.post("/api-keys", {"nope": 1}, format="json")
    assert response.status_code == 201 and "nope" in response["Warning"]


def test_expired_key_stops_working_and_is_still_listed(client, org):
    issued = api_key_create(organization=org, name="short", expires_in_days=1)
    api = _with_key(issued.key)
    assert api.get("/collections").status_code == 200
    APIKey.objects.filter(pk=issued.api_key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api.get("/collections").status_code == 401
    listed = {k["id"]: k for k in client.get("/api-keys").json()}
    assert str(issued.api_key.id) in listed  # visible (so it can be rotated away or deleted), but dead


def test_delete_revokes_at_once(client, org):
    issued = api_key_create(organization=org, name="to-revoke")
    api = _with_key(issued.key)
    assert api.get("/collections").status_code == 200
    response = client.delete(f"/api-keys/{issued.api_key.id}")
    assert response.status_code == 200 and response.json()["id"] == str(issued.api_key.id)
    assert api.get("/collections").status_code == 401
    assert client.get(f"/api-keys/{issued.api_key.id}").status_code == 404
    assert str(issued.api_key.id) not in {k["id"] for k in client.get("/api-keys").json()}
    assert client.delete(f"/api-keys/{issued.api_key.id}").status_code == 404


def test_delete_by_query_parameter_like_the_public_api(client, org):
    issued = api_key_create(organization=org, name="sdk")
    assert client.delete(f"/api-keys?id={issued.api_key.id}").status_code == 200
    assert _with_key(issued.key).get("/collections").status_code == 401
    assert client.delete("/api-keys").status_code == 422
    assert client.delete("/api-keys?id=not-a-uuid").status_code == 422


def test_a_key_can_revoke_itself(org):
    issued = api_key_create(organization=org, name="self")
    api = _with_key(issued.key)
    assert api.delete(f"/api-keys/{issued.api_key.id}").status_code == 200
    assert api.get("/collections").status_code == 401


def test_rotate_issues_a_new_key_and_revokes_the_old_one(client, org, owner):
    old = api_key_create(organization=org, name="deploy", user=owner, created_by=owner)
    response = client.post(f"/api-keys/{old.api_key.id}/rotate", {"expiration_days": 30}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] != str(old.api_key.id)
    assert body["name"] == "deploy" and body["user_id"] == str(owner.id)  # same name, same binding
    new_row = APIKey.objects.get(pk=body["id"])
    assert new_row.rotated_from_id == old.api_key.id
    assert timedelta(days=29) < new_row.expires_at - timezone.now() <= timedelta(days=30)
    assert _with_key(old.key).get("/collections").status_code == 401
    assert _with_key(body["decrypted_key"]).get("/collections").status_code == 200
    # A revoked key cannot be rotated again, and is gone from the list.
    assert client.post(f"/api-keys/{old.api_key.id}/rotate").status_code == 404


def test_rotate_without_body_uses_the_default_expiry(client, org):
    old = api_key_create(organization=org, name="no-body")
    body = client.post(f"/api-keys/{old.api_key.id}/rotate").json()
    row = APIKey.objects.get(pk=body["id"])
    assert timedelta(days=89) < row.expires_at - timezone.now() <= timedelta(days=90)


def test_rotating_an_expired_key_is_refused(client, org):
    old = api_key_create(organization=org, name="dead")
    APIKey.objects.filter(pk=old.api_key.pk).update(expires_at=timezone.now() - timedelta(days=1))
    response = client.post(f"/api-keys/{old.api_key.id}/rotate")
    assert response.status_code == 422
    assert "create a new key" in response.json()["detail"][0]["msg"]


def test_lookup_is_by_prefix_never_a_scan(org):
    keys = [api_key_create(organization=org, name=f"k{i}").key for i in range(5)]
    with CaptureQueriesContext(connection) as queries:
        found = api_key_authenticate(keys[3])
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1
    assert '"tenancy_apikey"."prefix" =' in selects[0] and "LIMIT 1" in selects[0]
    assert found[0].name == "k3"


def test_last_used_is_recorded_at_most_once_a_minute(org):
    issued = api_key_create(organization=org, name="used")
    api = _with_key(issued.key)
    api.get("/collections")
    first = APIKey.objects.get(pk=issued.api_key.pk).last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        api.get("/collections")
    assert not any(q["sql"].startswith("UPDATE \"tenancy_apikey\"") for q in queries.captured_queries)
    assert APIKey.objects.get(pk=issued.api_key.pk).last_used_at == first
    body = APIClient()
    APIKey.objects.filter(pk=issued.api_key.pk).update(last_used_at=first - timedelta(minutes=5))
    body.credentials(HTTP_X_API_KEY=issued.key)
    body.get("/collections")
    assert APIKey.objects.get(pk=issued.api_key.pk).last_used_at > first - timedelta(minutes=5)


# --- user-bound keys ---

def test_member_creates_a_key_bound_to_themselves_that_acts_as_them(org, member):
    api = _session(member)
    refused = api.post("/api-keys", {"name": "org-wide"}, format="json")
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    response = api.post("/api-keys", {"name": "mine", "user_bound": True}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["user_id"] == str(member.id) and body["user_email"] == member.email
    assert body["created_by_email"] == member.email
    api_key, membership = api_key_authenticate(body["decrypted_key"])
    actor = APIKeyActor(api_key, membership)
    assert actor.is_user_principal and actor.user == member and actor.pk == member.pk
    assert actor.email == member.email and membership.role == "member"
    # Created objects record the user behind the key.
    created = _with_key(body["decrypted_key"]).post("/collections", {"name": "Member docs"}, format="json").json()
    assert created["created_by_email"] == member.email


def test_organization_wide_key_acts_as_no_user(org, owner):
    issued = api_key_create(organization=org, name="org", created_by=owner)
    api_key, membership = api_key_authenticate(issued.key)
    actor = APIKeyActor(api_key, membership)
    assert not actor.is_user_principal and actor.user is None and actor.pk is None and membership is None
    assert actor.email == owner.email  # recorded as created_by on what it creates
    created = _with_key(issued.key).post("/collections", {"name": "Org docs"}, format="json").json()
    assert created["created_by_email"] == owner.email


def test_an_org_wide_key_cannot_mint_a_user_bound_key(client):
    response = client.post("/api-keys", {"user_bound": True}, format="json")
    assert response.status_code == 403 and "user_bound" in response.json()["detail"]


def test_members_see_and_manage_only_their_own_keys(org, owner, member):
    theirs = api_key_create(organization=org, name="owner's", user=owner, created_by=owner)
    mine = api_key_create(organization=org, name="member's", user=member, created_by=member)
    api = _session(member)
    assert [k["id"] for k in api.get("/api-keys").json()] == [str(mine.api_key.id)]
    assert api.get(f"/api-keys/{theirs.api_key.id}").status_code == 404
    assert api.delete(f"/api-keys/{theirs.api_key.id}").status_code == 404
    assert api.post(f"/api-keys/{theirs.api_key.id}/rotate").status_code == 404
    assert api.post(f"/api-keys/{mine.api_key.id}/rotate").status_code == 200
    # Admins and owners see all.
    assert {k["name"] for k in _session(owner).get("/api-keys").json()} >= {"owner's", "member's"}


def test_a_user_bound_key_stops_working_when_its_user_leaves(org, owner, member):
    issued = api_key_create(organization=org, name="leaver", user=member, created_by=member)
    api = _with_key(issued.key)
    assert api.get("/collections").status_code == 200
    membership_remove(membership=Membership.objects.get(user=member, organization=org))
    assert api.get("/collections").status_code == 401


def test_a_user_bound_key_stops_working_when_its_user_is_deactivated(org, member):
    issued = api_key_create(organization=org, name="inactive", user=member)
    User.objects.filter(pk=member.pk).update(is_active=False)
    assert _with_key(issued.key).get("/collections").status_code == 401


def test_a_key_cannot_be_bound_to_a_non_member(org, other_org):
    from airweave.tenancy.services import TenancyError

    stranger = _member(other_org, "stranger@globex.example", Membership.Role.OWNER)
    with pytest.raises(TenancyError):
        api_key_create(organization=org, name="x", user=stranger)


def test_api_keys_require_authentication(db):
    for method, path in (("get", "/api-keys"), ("post", "/api-keys"),
                         ("get", "/api-keys/00000000-0000-0000-0000-000000000000")):
        assert getattr(APIClient(), method)(path).status_code == 401


def test_openapi_lists_the_api_key_endpoints(client):
    paths = APIClient().get("/openapi.json").json()["paths"]
    assert {"/api-keys", "/api-keys/{id}", "/api-keys/{id}/rotate"} <= set(paths)
