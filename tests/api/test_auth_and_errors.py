"""Authentication (X-API-Key, Authorization: Bearer) and the error shapes of docs/api.md."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from airweave.tenancy.models import APIKey
from airweave.tenancy.services import api_key_create

PROTECTED = [
    ("get", "/collections"),
    ("get", "/collections/count"),
    ("post", "/collections"),
    ("get", "/collections/docs"),
    ("post", "/collections/docs/search/instant"),
    ("get", "/sources"),
    ("get", "/source-connections"),
    ("get", "/source-connections/00000000-0000-0000-0000-000000000000/jobs"),
]


@pytest.fixture
def anon(db):
    return APIClient()


def call(api, method, url, **headers):
    return getattr(api, method)(url, headers=headers) if headers else getattr(api, method)(url)


def assert_401(response):
    assert response.status_code == 401, (response.status_code, response.content)
    assert isinstance(response.json()["detail"], str)
    assert response.has_header("WWW-Authenticate")


@pytest.mark.parametrize("method, url", PROTECTED)
def test_no_key_is_401(anon, method, url):
    assert_401(call(anon, method, url))


@pytest.mark.parametrize("key", ["garbage", "aw_", "aw_deadbeef_notthesecret", "", "Bearer", "aw_x_y_z"])
def test_garbage_key_is_401(anon, key):
    assert_401(anon.get("/collections", headers={"X-API-Key": key}))
    assert_401(anon.get("/collections", headers={"Authorization": f"Bearer {key}"}))


def test_right_prefix_wrong_secret_is_401(anon, org):
    issued = api_key_create(organization=org, name="k")
    prefix = issued.key.split("_")[1]
    assert_401(anon.get("/collections", headers={"X-API-Key": f"aw_{prefix}_wrong-secret"}))


def test_valid_key_works(anon, api_key):
    r = anon.get("/collections", headers={"X-API-Key": api_key})
    assert r.status_code == 200
    assert r.json() == []


def test_expired_key_is_401(anon, org):
    issued = api_key_create(organization=org, name="old")
    assert anon.get("/collections", headers={"X-API-Key": issued.key}).status_code == 200
    APIKey.objects.filter(pk=issued.api_key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_401(anon.get("/collections", headers={"X-API-Key": issued.key}))
    assert_401(anon.get("/collections", headers={"Authorization": f"Bearer {issued.key}"}))


def test_revoked_key_is_401(anon, org):
    issued = api_key_create(organization=org, name="revoked")
    assert anon.get("/collections", headers={"X-API-Key": issued.key}).status_code == 200
    APIKey.objects.filter(pk=issued.api_key.pk).update(revoked_at=timezone.now())
    assert_401(anon.get("/collections", headers={"X-API-Key": issued.key}))


def test_key_without_expiry_works(anon, org):
    issued = api_key_create(organization=org, name="forever", expires_in_days=None)
    assert issued.api_key.expires_at is None
    assert anon.get("/collections", headers={"X-API-Key": issued.key}).status_code == 200


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_authorization_bearer_works(anon, api_key, make_collection, scheme):
    make_collection(readable_id="docs")
    r = anon.get("/collections/docs", headers={"Authorization": f"{scheme} {api_key}"})
    assert r.status_code == 200
    assert r.json()["readable_id"] == "docs"


@pytest.mark.parametrize("header", ["X-API-Key", "x-api-key", "X-API-KEY", "x-Api-kEy"])
def test_header_name_is_case_insensitive(anon, api_key, header):
    assert anon.get("/collections/count", headers={header: api_key}).status_code == 200


def test_other_authorization_schemes_are_401(anon, api_key):
    assert_401(anon.get("/collections", headers={"Authorization": f"Basic {api_key}"}))
    assert_401(anon.get("/collections", headers={"Authorization": "Bearer "}))


def test_key_acts_for_its_own_organization(anon, api_key, other_api_key, make_collection):
    make_collection(readable_id="docs")
    assert anon.get("/collections/count", headers={"X-API-Key": api_key}).json() == 1
    assert anon.get("/collections/count", headers={"X-API-Key": other_api_key}).json() == 0


def test_use_is_recorded(anon, org):
    issued = api_key_create(organization=org, name="used")
    assert issued.api_key.last_used_at is None
    anon.get("/collections", headers={"X-API-Key": issued.key})
    issued.api_key.refresh_from_db()
    assert issued.api_key.last_used_at is not None


# --- error shapes ---

def test_404_shape(client):
    r = client.get("/collections/nope")
    assert r.status_code == 404
    assert set(r.json()) == {"detail"} and isinstance(r.json()["detail"], str)


def test_422_shape(client):
    r = client.post("/collections", {"name": "ab"}, format="json")
    assert r.status_code == 422
    (item,) = r.json()["detail"]
    assert item["loc"] == ["body", "name"]
    assert item["msg"] and item["type"]


def test_409_shape(client, make_collection):
    make_collection(readable_id="docs")
    r = client.post("/collections", {"name": "Again docs", "readable_id": "docs"}, format="json")
    assert r.status_code == 409
    assert set(r.json()) == {"detail"} and isinstance(r.json()["detail"], str)


@pytest.mark.parametrize("raw", ["{", "{'single': 'quotes'}", '{"name": "abcd",}', "\x00"])
def test_malformed_json_is_422(client, raw):
    r = client.post("/collections", data=raw, content_type="application/json")
    assert r.status_code == 422, (r.status_code, r.content)
    (item,) = r.json()["detail"]
    assert item["loc"] == ["body"] and item["type"] == "json_invalid"


@pytest.mark.parametrize("raw", ["[]", '"text"', "42", "null"])
def test_json_that_is_not_an_object_is_422_not_500(client, raw):
    r = client.post("/collections", data=raw, content_type="application/json")
    assert r.status_code == 422, (r.status_code, r.content)


def test_wrong_content_type_is_a_client_error(client):
    r = client.post("/collections", data="name=abcd", content_type="application/x-www-form-urlencoded")
    assert 400 <= r.status_code < 500
    assert r.status_code != 500


def test_non_uuid_connection_id_is_a_json_422_naming_the_parameter(client):
    r = client.get("/source-connections/not-a-uuid")
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["path", "id"]


def test_method_not_allowed_is_405(client):
    assert client.put("/collections/count").status_code == 405


def test_oversized_body_answers_413_with_json(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = client.post("/collections", data='{"name": "' + "a" * 5000 + '"}', content_type="application/json")
    assert response.status_code == 413
    assert "too large" in response.json()["detail"]


@pytest.mark.parametrize("url, body", [
    ("/collections", {"name": 12345}),
    ("/collections/{rid}/search/instant", {"query": 42}),
    ("/collections/{rid}/search", {"query": True}),
])
def test_numbers_and_booleans_are_not_text(client, make_collection, url, body):
    collection = make_collection()
    response = client.post(url.format(rid=collection.readable_id), body, format="json")
    assert response.status_code == 422
    [field] = body
    assert response.json()["detail"][0]["loc"][-1] == field and "string" in response.json()["detail"][0]["msg"]
