"""The document360 source against a fake Document360 API that answers only its documented requests
(the `api_token` header; project versions, the category tree, an article's published version):
articles in nested categories, an unpublished one left out, a `success: false` answer turned into a
clear error, a 429 with Retry-After waited out, a refused token marking the connection
`needs_reauth`, a sync found by search, then an incremental run that fetches only the article
whose published version changed and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.base import SourceError
from connectors.sources.document360 import Document360ArticleEntity, Document360Source
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://apihub.document360.io"
TOKEN = "d360-Zm9vYmFyYmF6MDEyMzQ1Njc4OWFiY2RlZg"
AUTH = {"api_token": TOKEN}
VERSION = {"id": "pv-1", "version_number": 1, "version_code_name": "v1", "is_main_version": True, "is_beta": False,
           "is_public": True, "created_at": "2024-01-01T00:00:00Z"}


def summary(aid, title, public=1, latest=1):
    return {"id": aid, "title": title, "slug": title.lower().replace(" ", "-"), "status": 3, "order": 0,
            "public_version": public, "latest_version": latest, "hidden": False}


def tree(storms_version=1, with_menu=True):
    return [{"id": "cat-1", "name": "Operations", "order": 0, "slug": "operations", "hidden": False,
             "articles": [summary("a-1", "Storm procedure", storms_version, storms_version)],
             "child_categories": [{"id": "cat-2", "name": "Crew", "order": 0, "slug": "crew", "articles": [
                 summary("a-2", "Crew rota"), summary("a-3", "Draft: new uniforms", public=None, latest=1)],
                 "child_categories": []}]},
            *([{"id": "cat-3", "name": "Galley", "articles": [summary("a-4", "Café menu")], "child_categories": []}]
              if with_menu else [])]


TEXT = {"a-1": "When winds exceed 50 knots all sailings are suspended and passengers rebooked.",
        "a-2": "The crew rota is published every Friday.", "a-4": "Soup of the day and fresh bread."}


def kb(fake, categories=None, articles=None):
    fake.route("GET", "/v2/ProjectVersions", headers=AUTH, reply={"data": [VERSION], "extension_data": None,
                                                                   "success": True, "errors": [], "warnings": []})
    fake.route("GET", "/v2/ProjectVersions/pv-1/categories", headers=AUTH,
               reply={"data": categories or tree(), "success": True, "errors": [], "warnings": []})
    for (aid, version), text in (articles or {(k, 1): v for k, v in TEXT.items()}).items():
        fake.route("GET", f"/v2/Articles/{aid}/en/versions/{version}", headers=AUTH, reply={"data": {
            "id": aid, "title": {"a-1": "Storm procedure", "a-2": "Crew rota", "a-4": "Café menu"}[aid],
            "content": text, "html_content": f"<p>{text}</p>", "version_number": version, "category_id": "cat-1",
            "url": f"https://docs.harbour.example/docs/{aid}", "created_at": "2024-02-01T09:00:00Z",
            "modified_at": "2024-05-03T09:00:00Z", "status": 3}, "success": True, "errors": []})


def make():
    return Document360Source(Document360Source.validate_config({}), {"api_token": TOKEN})


def test_published_articles_in_their_nested_categories(vendor):
    kb(vendor(API))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["article:a-1", "article:a-2", "article:a-4"]  # the draft is left out
    rota = entities["article:a-2"]
    assert isinstance(rota, Document360ArticleEntity) and rota.text == TEXT["a-2"]
    assert [b.name for b in rota.breadcrumbs] == ["v1", "Operations", "Crew"]
    assert rota.web_url == "https://docs.harbour.example/docs/a-2"
    assert source.is_full_listing() and source.next_cursor() == {"since": {"a-1": 1, "a-2": 1, "a-4": 1}}


def test_an_unsuccessful_answer_is_a_clear_error(vendor):
    vendor(API).route("GET", "/v2/ProjectVersions", headers=AUTH, reply={
        "data": None, "success": False, "errors": [{"description": "Project not found", "error_code": "404"}]})
    with pytest.raises(SourceError, match="Project not found"):
        list(make().generate_entities({}))


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/v2/ProjectVersions", headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"success": False, "errors": [{"description": "Too many requests"}]}),
        (200, {}, {"data": [VERSION], "success": True})])
    kb(fake)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 3 and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/v2/ProjectVersions", reply=(401, {}, {"success": False, "errors": [
        {"description": "Invalid API token", "error_code": "401"}]}))
    connection = connect(make_collection(), "document360", {"api_token": "revoked-token-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_fetches_only_the_republished_article(vendor, make_collection, client):
    fake = vendor(API)
    kb(fake)
    connection = connect(make_collection(), "document360", {"api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["article:a-1"]

    fake.routes.clear()
    kb(fake, categories=tree(storms_version=2, with_menu=False),
       articles={("a-1", 2): "When winds exceed 45 knots all sailings are suspended."})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"article:a-1", "article:a-2"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"a-1": 2, "a-2": 1}
