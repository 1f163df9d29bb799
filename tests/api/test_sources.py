"""REST /sources: the catalog of sources (docs/api.md Source and ConfigField shapes)."""
from __future__ import annotations

SOURCE_FIELDS = {
    "name", "short_name", "description", "class_name", "auth_methods", "oauth_type", "requires_byoc",
    "auth_config_class", "config_class", "auth_fields", "config_fields", "labels", "supports_continuous",
    "federated_search", "supports_access_control", "mirrored_permissions", "supports_browse_tree", "supports_temporal_relevance",
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


OFFLINE = {
    # short name: (config fields in order, required config fields, auth fields, secret auth fields, entity types)
    "slack_export": (["path", "channels", "workspace_url"], {"path"}, [], set(),
                     ["SlackExportChannelEntity", "SlackExportMessageEntity"]),
    "notion_export": (["path"], {"path"}, [], set(),
                      ["NotionExportPageEntity", "NotionExportDatabaseEntity", "NotionExportFileEntity"]),
    "mbox": (["path"], {"path"}, [], set(), ["EmailEntity", "EmailAttachmentEntity"]),
    "maildir": (["path", "folders"], {"path"}, [], set(), ["EmailEntity", "EmailAttachmentEntity"]),
    "imap": (["host", "port", "security", "verify_tls", "mailboxes"], {"host"}, ["username", "password"],
             {"password"}, ["EmailEntity", "EmailAttachmentEntity"]),
    "git": (["path", "branch", "include_history", "max_commits", "browse_url"], {"path"}, [], set(),
            ["GitFileEntity", "GitCommitEntity"]),
    "postgresql": (["host", "port", "database", "sslmode", "tables", "columns", "title_columns",
                    "updated_at_column", "created_at_column"], {"host", "database", "tables"},
                   ["username", "password"], {"password"}, ["SQLRowEntity"]),
    "mysql": (["host", "port", "database", "tables", "columns", "title_columns", "updated_at_column",
               "created_at_column"], {"host", "database", "tables"}, ["username", "password"], {"password"},
              ["SQLRowEntity"]),
    "sqlite": (["path", "tables", "columns", "title_columns", "updated_at_column", "created_at_column"],
               {"path", "tables"}, [], set(), ["SQLRowEntity"]),
    "push": ([], set(), [], set(), ["PushDocumentEntity"]),
}


def test_offline_sources_declare_their_config_and_auth_fields(client):
    by_name = {s["short_name"]: s for s in client.get("/sources").json()}
    for short_name, (config, required, auth, secret, types) in OFFLINE.items():
        s = by_name[short_name]
        fields = s["config_fields"]["fields"]
        assert [f["name"] for f in fields] == config, short_name
        assert {f["name"] for f in fields if f["required"]} == required, short_name
        assert all(f["title"] and f["description"] for f in fields), short_name
        assert s["auth_methods"] == ["direct"]
        if auth:
            auth_fields = s["auth_fields"]["fields"]
            assert [f["name"] for f in auth_fields] == auth, short_name
            assert {f["name"] for f in auth_fields if f["is_secret"]} == secret, short_name
            assert s["auth_config_class"] and s["auth_fields"]["fields"][0]["required"] is True
        else:
            assert s["auth_fields"] is None, short_name
        assert s["output_entity_definitions"] == types, short_name
    enums = {f["name"]: f.get("enum_values") for f in by_name["imap"]["config_fields"]["fields"]}
    assert enums["security"] == ["ssl", "starttls", "none"]
    assert by_name["mysql"]["auth_fields"]["fields"][1]["required"] is False  # empty passwords exist


def test_each_source_says_what_of_its_vendors_permissions_it_mirrors(client):
    by_name = {s["short_name"]: s for s in client.get("/sources").json()}
    github = by_name["github"]
    assert github["supports_access_control"] and github["mirrored_permissions"]
    assert all(set(p) == {"permission", "mirrored"} and isinstance(p["mirrored"], bool)
               for s in by_name.values() for p in s["mirrored_permissions"])
    assert {p["mirrored"] for p in github["mirrored_permissions"]} == {True, False}
    assert [p["mirrored"] for p in by_name["notion"]["mirrored_permissions"]] == [False]
    assert by_name["local_files"]["mirrored_permissions"] == []
