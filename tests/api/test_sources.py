"""REST /sources: the catalog of sources (API.md Source and ConfigField shapes)."""
from __future__ import annotations

SOURCE_FIELDS = {
    "name", "short_name", "description", "class_name", "auth_methods", "oauth_type", "requires_byoc",
    "auth_config_class", "config_class", "auth_fields", "config_fields", "labels", "supports_continuous",
    "federated_search", "supports_access_control", "supports_browse_tree", "supports_temporal_relevance",
    "rate_limit_level", "output_entity_definitions",
}
CONFIG_FIELD_KEYS = {"name", "title", "description", "type", "required", "items_type", "is_secret", "enum_values"}
AUTH_METHODS = {"direct", "oauth_browser", "oauth_token", "oauth_byoc", "auth_provider"}
FIELD_TYPES = {"string", "integer", "boolean", "array", "number"}


def test_list_includes_local_files_with_its_config_fields(client):
    r = client.get("/sources")
    assert r.status_code == 200
    sources = r.json()
    assert isinstance(sources, list) and sources
    for s in sources:
        assert set(s) == SOURCE_FIELDS, s["short_name"]
        assert set(s["auth_methods"]) <= AUTH_METHODS
        for f in s["config_fields"]["fields"]:
            assert set(f) <= CONFIG_FIELD_KEYS and {"name", "title", "type"} <= set(f)
            assert f["type"] in FIELD_TYPES
    by_name = {s["short_name"]: s for s in sources}
    assert "local_files" in by_name
    local = by_name["local_files"]
    fields = {f["name"]: f for f in local["config_fields"]["fields"]}
    assert list(fields) == ["path", "include", "exclude"]
    assert fields["path"]["type"] == "string" and fields["path"]["required"] is True
    assert fields["include"]["type"] == "array" and fields["include"]["items_type"] == "string"
    assert fields["exclude"]["type"] == "array" and fields["exclude"]["required"] is False
    assert local["auth_methods"] == ["direct"]
    assert local["federated_search"] is False
    assert "LocalFileEntity" in local["output_entity_definitions"]


def test_get_one_source(client):
    r = client.get("/sources/local_files")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == SOURCE_FIELDS
    assert body["short_name"] == "local_files"
    assert body["name"] == "Local Files"
    assert body == next(s for s in client.get("/sources").json() if s["short_name"] == "local_files")


def test_unknown_source_is_404(client):
    r = client.get("/sources/nope")
    assert r.status_code == 404
    assert isinstance(r.json()["detail"], str)


def test_catalog_needs_credentials(db):
    from rest_framework.test import APIClient

    assert APIClient().get("/sources").status_code == 401
