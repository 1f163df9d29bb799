"""REST /collections: create, list, count, get, patch, delete — shapes and errors of docs/api.md."""
from __future__ import annotations

import re
from datetime import datetime

import pytest
from django.conf import settings as django_settings

COLLECTION_FIELDS = {
    "id", "name", "readable_id", "organization_id", "created_at", "modified_at", "created_by_email",
    "modified_by_email", "status", "vector_size", "embedding_model_name", "sync_config",
    "source_connection_summaries",
}
READABLE_ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@pytest.fixture
def local_root(settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    return tmp_path


def create(client, **body):
    return client.post("/collections", body, format="json")


def assert_validation_shape(response, field=None):
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert isinstance(detail, list) and detail
    for item in detail:
        assert set(item) == {"loc", "msg", "type"}
        assert isinstance(item["loc"], list) and isinstance(item["msg"], str) and isinstance(item["type"], str)
    if field is not None:
        assert any(field in item["loc"] for item in detail), detail


def test_create_with_readable_id_returns_the_full_collection(client, org):
    r = create(client, name="Engineering docs", readable_id="eng-docs")
    assert r.status_code == 201, r.content
    body = r.json()
    assert set(body) == COLLECTION_FIELDS
    assert body["name"] == "Engineering docs"
    assert body["readable_id"] == "eng-docs"
    assert body["organization_id"] == str(org.id)
    assert body["vector_size"] == 384
    assert body["embedding_model_name"] == django_settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL
    assert "MiniLM" in body["embedding_model_name"]
    assert body["status"] == "NEEDS SOURCE"
    assert body["source_connection_summaries"] == []
    assert body["sync_config"] is None
    for ts in ("created_at", "modified_at"):
        assert datetime.fromisoformat(body[ts]).tzinfo is not None


def test_create_without_readable_id_generates_slug_plus_suffix(client):
    r = create(client, name="My Team's Handbook!")
    assert r.status_code == 201, r.content
    rid = r.json()["readable_id"]
    assert READABLE_ID_RE.match(rid), rid
    assert rid.startswith("my-team")
    assert re.search(r"-[a-z0-9]{6}$", rid), rid
    # Two collections with the same name get different generated ids.
    rid2 = create(client, name="My Team's Handbook!").json()["readable_id"]
    assert rid2 != rid and READABLE_ID_RE.match(rid2)


def test_create_with_sync_config(client):
    r = create(client, name="Configured", readable_id="configured", sync_config={"batch": 10})
    assert r.status_code == 201
    assert r.json()["sync_config"] == {"batch": 10}


@pytest.mark.parametrize("readable_id", ["Bad_ID", "has space", "-leading", "trailing-", "double--hyphen", "UPPER"])
def test_bad_readable_id_is_422_with_detail_list(client, readable_id):
    r = create(client, name="Valid name", readable_id=readable_id)
    assert_validation_shape(r, "readable_id")


def test_duplicate_readable_id_is_409(client):
    assert create(client, name="First one", readable_id="dup").status_code == 201
    r = create(client, name="Second one", readable_id="dup")
    assert r.status_code == 409
    assert isinstance(r.json()["detail"], str) and "dup" in r.json()["detail"]


@pytest.mark.parametrize("name", ["abc", "", "x" * 65])
def test_bad_name_is_422(client, name):
    r = create(client, name=name, readable_id="fine-id")
    assert_validation_shape(r, "name")


def test_missing_name_is_422_and_an_unknown_field_is_ignored_and_named(client):
    """Unknown fields are ignored as the public Airweave API does (issue 12); the Warning header names them."""
    assert_validation_shape(create(client, readable_id="no-name"), "name")
    r = create(client, name="Good name", colour="blue")
    assert r.status_code == 201 and "colour" not in r.json()
    assert r["Warning"] == '299 - "Unknown fields ignored: colour"'


def test_list_skip_limit_and_search(client):
    for i, name in enumerate(["Alpha notes", "Beta notes", "Gamma papers", "Delta papers"]):
        assert create(client, name=name, readable_id=f"c{i}").status_code == 201
    r = client.get("/collections")
    assert r.status_code == 200
    body = r.json()
    assert [c["readable_id"] for c in body] == ["c0", "c1", "c2", "c3"]  # oldest first
    assert all(set(c) == COLLECTION_FIELDS for c in body)

    page = client.get("/collections", {"skip": 1, "limit": 2}).json()
    assert [c["readable_id"] for c in page] == ["c1", "c2"]
    assert [c["name"] for c in client.get("/collections", {"search": "PAPERS"}).json()] == ["Gamma papers", "Delta papers"]
    assert [c["readable_id"] for c in client.get("/collections", {"search": "c3"}).json()] == ["c3"]
    assert client.get("/collections", {"search": "nothing-like-this"}).json() == []


@pytest.mark.parametrize("params", [{"skip": -1}, {"limit": 0}, {"limit": "ten"}, {"limit": 1001}])
def test_list_bad_paging_is_422(client, params):
    assert_validation_shape(client.get("/collections", params))


def test_count(client):
    assert client.get("/collections/count").json() == 0
    create(client, name="Counted one", readable_id="one")
    create(client, name="Counted two", readable_id="two")
    r = client.get("/collections/count")
    assert r.status_code == 200
    assert r.json() == 2


def test_get_patch_delete(client):
    created = create(client, name="Original name", readable_id="lifecycle").json()
    r = client.get("/collections/lifecycle")
    assert r.status_code == 200
    assert r.json() == created

    r = client.patch("/collections/lifecycle", {"name": "Renamed collection"}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["name"] == "Renamed collection"
    assert r.json()["readable_id"] == "lifecycle"
    assert client.get("/collections/lifecycle").json()["name"] == "Renamed collection"

    assert_validation_shape(client.patch("/collections/lifecycle", {"name": "no"}, format="json"), "name")
    r = client.patch("/collections/lifecycle", {"readable_id": "x"}, format="json")  # not changeable: ignored, named
    assert r.status_code == 200 and r.json()["readable_id"] == "lifecycle" and "readable_id" in r["Warning"]

    r = client.delete("/collections/lifecycle")
    assert r.status_code == 200
    assert r.json()["readable_id"] == "lifecycle"
    assert client.get("/collections/lifecycle").status_code == 404
    assert client.delete("/collections/lifecycle").status_code == 404
    assert client.get("/collections/count").json() == 0


def test_unknown_collection_is_404(client):
    r = client.get("/collections/does-not-exist")
    assert r.status_code == 404
    assert isinstance(r.json()["detail"], str)
    assert client.patch("/collections/does-not-exist", {"name": "Whatever"}, format="json").status_code == 404


def test_status_becomes_active_with_a_source(client, local_root, write_files):
    create(client, name="With a source", readable_id="with-source")
    root = write_files({"a.md": "# A\nSome text about apples."})
    r = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "with-source",
                                            "name": "My folder", "config": {"path": str(root)}}, format="json")
    assert r.status_code == 201, r.content
    body = client.get("/collections/with-source").json()
    assert body["status"] == "ACTIVE"
    assert body["source_connection_summaries"] == [{"short_name": "local_files", "name": "My folder"}]


def test_deleting_a_collection_deletes_its_connections(client, local_root, write_files):
    create(client, name="Doomed collection", readable_id="doomed")
    root = write_files({"a.md": "# A\nSome text."})
    conn = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "doomed",
                                               "config": {"path": str(root)}}, format="json").json()
    assert client.delete("/collections/doomed").status_code == 200
    assert client.get(f"/source-connections/{conn['id']}").status_code == 404


# --- bad input must never answer 500 (docs/api.md: "5xx only for real faults ... never for bad input") ---

def test_huge_skip_is_not_a_server_error(client):
    r = client.get("/collections", {"skip": 10**20})
    assert r.status_code in (200, 422)


def test_nul_in_search_parameter_is_not_a_server_error(client):
    r = client.get("/collections", {"search": "a\x00b"})
    assert r.status_code in (200, 422)


def test_nul_in_readable_id_path_is_404(client):
    assert client.get("/collections/a%00b").status_code == 404


def test_nul_in_sync_config_is_422(client):
    r = client.post("/collections", {"name": "Good name", "sync_config": {"a": "b\x00c"}}, format="json")
    assert r.status_code == 422


def test_query_parameter_errors_are_located_in_the_query(client):
    r = client.get("/collections", {"limit": 0})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "limit"]
