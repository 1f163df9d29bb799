"""The Notion source against real Notion API responses (../shared/data/notion_api_cassettes, recorded by
notion-sdk-py against api.notion.com, Notion-Version 2025-09-03), served by `responses`: search and
block pagination, entity fields and breadcrumbs, incremental runs, deletions, 429, 401, and a sync
whose content is found by search."""
from __future__ import annotations

import copy
import json

import pytest
import responses
import yaml

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.services import source_connection_create
from connectors.sources.notion import NotionDatabaseEntity, NotionPageEntity, NotionSource, block_markdown
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

CASSETTES = SHARED_DATA / "notion_api_cassettes" / "cassettes"
API = "https://api.notion.com/v1"


def cassette(name: str) -> list[dict]:
    """The interactions of one cassette as {method, uri, body (decoded JSON), status}."""
    out = []
    for i in yaml.safe_load((CASSETTES / f"{name}.yaml").read_text())["interactions"]:
        out.append({"method": i["request"]["method"], "uri": i["request"]["uri"],
                    "status": i["response"]["status"]["code"], "body": json.loads(i["response"]["body"]["string"])})
    return out


def recorded(name: str, method: str, uri_part: str, index: int = 0) -> dict:
    hits = [i for i in cassette(name) if i["method"] == method and uri_part in i["uri"]]
    return hits[index]


# Real objects: the workspace-level root page (from a recorded search), a page created under it
# whose five paragraphs are listed two by two, and a data source (database) under another page.
ROOT = recorded("test_collect_paginated_api", "POST", "/search")["body"]["results"][0]
PAGE = recorded("test_iterate_paginated_api", "POST", "/pages")["body"]
BLOCK_PAGES = [i for i in cassette("test_iterate_paginated_api")
               if i["method"] == "GET" and "/children" in i["uri"]][:3]
DATA_SOURCE = recorded("test_data_sources_query", "POST", "/data_sources")["body"]
DS_PAGE = recorded("test_data_sources_query", "POST", "/pages")["body"]  # the database's parent page
ERROR_401 = recorded("test_api_response_error", "GET", "/users")["body"]
for obj in (ROOT, PAGE, DATA_SOURCE, DS_PAGE):
    obj.pop("request_id", None)


def search_page(results, next_cursor=None):
    return {"object": "list", "results": results, "next_cursor": next_cursor, "has_more": bool(next_cursor),
            "type": "page_or_data_source", "page_or_data_source": {}}


def empty_children():
    return {"object": "list", "results": [], "next_cursor": None, "has_more": False, "type": "block", "block": {}}


def paragraph_block(parent_id: str, block_id: str, text: str) -> dict:
    """A recorded paragraph block with its text replaced."""
    block = copy.deepcopy(BLOCK_PAGES[0]["body"]["results"][0])
    block["id"], block["parent"]["page_id"] = block_id, parent_id
    block["paragraph"]["rich_text"][0]["text"]["content"] = text
    block["paragraph"]["rich_text"][0]["plain_text"] = text
    return block


def page_under(parent: dict, page_id: str, title: str, edited: str) -> dict:
    page = copy.deepcopy(PAGE)
    page["id"], page["last_edited_time"] = page_id, edited
    page["parent"] = {"type": "page_id", "page_id": parent["id"]}
    page["properties"]["title"]["title"][0]["plain_text"] = title
    page["url"] = f"https://app.notion.com/p/{page_id.replace('-', '')}"
    return page


@pytest.fixture
def rsps(monkeypatch):
    monkeypatch.setattr(NotionSource, "page_size", 2)  # the page size of the recordings
    with responses.RequestsMock() as mock:
        yield mock


def add_search(rsps, *pages):
    """Search answers in order: the first without start_cursor, the next ones with the previous next_cursor."""
    cursor = None
    for body in pages:
        expected = {"sort": {"direction": "descending", "timestamp": "last_edited_time"}, "page_size": 2}
        if cursor:
            expected["start_cursor"] = cursor
        rsps.add("POST", f"{API}/search", json=body, match=[responses.matchers.json_params_matcher(expected)])
        cursor = body["next_cursor"]


def add_children(rsps, block_id, blocks=None):
    rsps.add("GET", f"{API}/blocks/{block_id}/children?page_size=2",
             json={**empty_children(), "results": blocks or []})


def add_recorded_page_content(rsps):
    for interaction in BLOCK_PAGES:
        rsps.add("GET", interaction["uri"], json=interaction["body"])


def make(credentials=None, **config):
    return NotionSource(NotionSource.validate_config(config), credentials or {"integration_secret": "ntn_test"})


def full_listing(rsps):
    add_search(rsps, search_page([PAGE, ROOT], next_cursor="cursor-2"), search_page([DATA_SOURCE, DS_PAGE]))
    add_recorded_page_content(rsps)
    add_children(rsps, ROOT["id"])
    add_children(rsps, DS_PAGE["id"])


def test_search_and_block_children_are_paginated_into_typed_entities(rsps):
    full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert set(entities) == {PAGE["id"], ROOT["id"], DATA_SOURCE["id"], DS_PAGE["id"]}
    page = entities[PAGE["id"]]
    assert isinstance(page, NotionPageEntity) and page.name == "Test 2026-07-04 11:25:25.315501"
    assert page.content == "\n".join(f"paragraph {n}" for n in range(5))  # three recorded pages of blocks
    assert [b.as_dict() for b in page.breadcrumbs] == [
        {"entity_id": ROOT["id"], "name": "Untitled", "entity_type": "NotionPageEntity"}]
    assert page.web_url == PAGE["url"] and page.created_at.isoformat() == "2026-07-04T09:25:00+00:00"
    assert page.raw_source_fields["parent_type"] == "page_id"
    database = entities[DATA_SOURCE["id"]]
    assert isinstance(database, NotionDatabaseEntity)
    assert database.name.startswith("Test Data Source") and database.schema == ["Name (title)"]
    assert [b.entity_id for b in database.breadcrumbs] == [ROOT["id"], DS_PAGE["id"]]  # via its parent page
    assert rsps.calls[0].request.headers["Notion-Version"] == "2025-09-03"
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer ntn_test"
    assert source.is_full_listing()
    assert source.next_cursor() == {"last_edited_time": max(o["last_edited_time"] for o in (PAGE, ROOT, DS_PAGE,
                                                                                            DATA_SOURCE))}


def test_an_unlisted_ancestor_is_read_once_for_the_breadcrumbs(rsps):
    parent = recorded("test_pages_retrieve", "GET", "/pages/")["body"]
    child = page_under(parent, "393abc1e-edcd-8000-8000-000000000001", "Runbook", "2026-07-05T10:00:00.000Z")
    add_search(rsps, search_page([child]))
    add_children(rsps, child["id"])
    rsps.add("GET", f"{API}/pages/{parent['id']}", json=parent)
    rsps.add("GET", f"{API}/pages/{parent['parent']['page_id']}", status=404,
             json=recorded("test_build_request_error_integration", "GET", "/pages/")["body"])
    (entity,) = list(make().generate_entities({}))
    assert [b.name for b in entity.breadcrumbs] == ["Test 2026-07-04 11:08:14.736683"]


def test_a_429_with_retry_after_is_retried(rsps):
    rsps.add("POST", f"{API}/search", status=429, headers={"Retry-After": "0"},
             json={"object": "error", "status": 429, "code": "rate_limited",
                   "message": "You have been rate limited. Please try again in a few minutes."})
    add_search(rsps, search_page([ROOT]))
    add_children(rsps, ROOT["id"])
    assert [e.entity_id for e in make().generate_entities({})] == [ROOT["id"]]
    assert [c.response.status_code for c in rsps.calls] == [429, 200, 200]


def test_a_refused_integration_secret_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = source_connection_create(collection=make_collection(), short_name="notion",
                                          authentication={"credentials": {"integration_secret": "ntn_revoked"}},
                                          sync_immediately=False)
    rsps.add("POST", f"{API}/search", status=401, json=ERROR_401)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_an_incremental_run_reads_only_changed_pages_and_removes_deleted_ones(
        rsps, make_collection, client):
    child = page_under(PAGE, "393abc1e-edcd-8000-8000-0000000000aa", "Incident review",
                       "2026-07-04T09:30:00.000Z")
    obsolete = page_under(ROOT, "393abc1e-edcd-8000-8000-0000000000cc", "Old notes", "2026-07-04T09:20:00.000Z")
    add_search(rsps, search_page([child, PAGE], next_cursor="c2"), search_page([obsolete, ROOT]))
    add_children(rsps, child["id"], [paragraph_block(child["id"], "393abc1e-edcd-8000-8000-0000000000b1",
                                                     "The outage came from an expired TLS certificate on the "
                                                     "payments gateway.")])
    add_children(rsps, obsolete["id"], [paragraph_block(obsolete["id"], "393abc1e-edcd-8000-8000-0000000000c1",
                                                        "Draft agenda for the offsite.")])
    add_recorded_page_content(rsps)
    add_children(rsps, ROOT["id"])
    connection = source_connection_create(collection=make_collection(), short_name="notion",
                                          authentication={"credentials": {"integration_secret": "ntn_test"}},
                                          sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 4)

    r = client.post("/collections/docs/search/instant", {"query": "expired certificate payments", "limit": 3},
                    format="json")
    top = r.json()["results"][0]
    assert top["airweave_system_metadata"]["original_entity_id"] == child["id"]
    assert [b["entity_id"] for b in top["breadcrumbs"]] == [ROOT["id"], PAGE["id"]]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["last_edited_time"] == "2026-07-04T09:30:00.000Z"

    # Next run: the child page was edited, PAGE and ROOT are unchanged (their blocks are not read
    # again), the obsolete page was trashed (search no longer lists it).
    rsps.reset()
    edited = {**child, "last_edited_time": "2026-07-06T08:00:00.000Z"}
    add_search(rsps, search_page([edited, PAGE], next_cursor="c2"), search_page([ROOT]))
    add_children(rsps, child["id"], [paragraph_block(child["id"], "393abc1e-edcd-8000-8000-0000000000b1",
                                                     "Root cause: a certificate renewal job that never ran.")])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == {
        child["id"], PAGE["id"], ROOT["id"]}
    assert [c.request.url for c in rsps.calls if "/blocks/" in c.request.url] == [
        f"{API}/blocks/{child['id']}/children?page_size=2"]


def test_trashed_results_are_reported_deleted(rsps):
    trashed = {**ROOT, "in_trash": True, "archived": True}
    add_search(rsps, search_page([trashed]))
    source = make()
    assert list(source.generate_entities({"last_edited_time": "2026-01-01T00:00:00.000Z"})) == []
    assert source.deleted_entity_ids() == [ROOT["id"]] and source.present_entity_ids() == set()
    assert not source.is_full_listing()


def test_database_rows_carry_their_properties():
    row = copy.deepcopy(PAGE)
    row["parent"] = {"type": "data_source_id", "data_source_id": DATA_SOURCE["id"],
                     "database_id": DATA_SOURCE["parent"]["database_id"]}
    row["properties"]["Status"] = {"id": "s", "type": "status", "status": {"id": "1", "name": "In progress",
                                                                           "color": "blue"}}
    row["properties"]["Points"] = {"id": "p", "type": "number", "number": 5}
    source = make()
    source._known = {o["id"]: o for o in (DATA_SOURCE, DS_PAGE, ROOT)}
    source._listed = [row["id"]]
    source._blocks = lambda block_id, depth: iter(())
    entity = source._page(row)
    assert entity.properties_text == "Status: In progress\nPoints: 5"
    assert entity.raw_source_fields["properties"] == {"Status": "In progress", "Points": 5}
    assert [b.entity_type for b in entity.breadcrumbs] == ["NotionPageEntity", "NotionPageEntity", "NotionDatabaseEntity"]


def test_block_markdown_covers_the_common_block_types():
    rich = [{"type": "text", "plain_text": "x"}]
    assert block_markdown({"type": "heading_2", "heading_2": {"rich_text": rich}}) == "## x"
    assert block_markdown({"type": "to_do", "to_do": {"rich_text": rich, "checked": True}}) == "[x] x"
    assert block_markdown({"type": "numbered_list_item", "numbered_list_item": {"rich_text": rich}}, 3) == "3. x"
    assert block_markdown({"type": "code", "code": {"rich_text": rich, "language": "python"}}) == "```python\nx\n```"
    assert block_markdown({"type": "table_row", "table_row": {"cells": [rich, rich]}}) == "| x | x |"
    assert block_markdown({"type": "child_page", "child_page": {"title": "Sub"}}) == "[Page: Sub]"
