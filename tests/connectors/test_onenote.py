"""The OneNote source against Graph's OneNote API shapes (sections with their parent notebook
expanded, pages per section, page content as HTML, `@odata.nextLink` pages), served by `responses`:
the fake answers only the documented requests ($select/$expand/$top, a bearer token).
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from airweave.collections.models import Entity
from connectors.services import source_connection_create
from connectors.sources._msgraph import GRAPH
from connectors.sources.onenote import OneNoteSource
from connectors.sync.services import sync_job_run, sync_job_start

TOKEN = "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"
SECTIONS = f"{GRAPH}/me/onenote/sections"
SECTIONS_NEXT = f"{SECTIONS}?$skiptoken=1-c2VjdGlvbnM"
NOTEBOOK = {"id": "1-3f3a05a6-3bbb-4f4e-8d5a-7b4ac5d4a6b1", "displayName": "Team notebook"}
PERSONAL = {"id": "1-9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e5f", "displayName": "Personal"}
ONCALL = {"id": "1-0d5e8a70-2b9c-4f1a-9d3e-6c7b8a9f0e12", "displayName": "On-call", "parentNotebook": NOTEBOOK,
          "parentSectionGroup": None}
RECIPES = {"id": "1-5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d", "displayName": "Recipes", "parentNotebook": PERSONAL,
           "parentSectionGroup": {"id": "1-77aa88bb-99cc-4ddd-8eee-ffff00001111", "displayName": "Home"}}


def page(page_id: str, title: str, modified: str) -> dict:
    return {"@odata.type": "#microsoft.graph.onenotePage", "id": page_id, "title": title,
            "createdDateTime": "2026-09-14T08:12:00Z", "lastModifiedDateTime": modified, "level": 0, "order": 0,
            "createdByAppId": "", "contentUrl": f"{GRAPH}/me/onenote/pages/{page_id}/content",
            "links": {"oneNoteClientUrl": {"href": f"onenote:https://contoso-my.sharepoint.com/{page_id}"},
                      "oneNoteWebUrl": {"href": f"https://contoso-my.sharepoint.com/:o:/r/{page_id}"}}}


RUNBOOK = page("1-a1b2c3d4e5f60718293a4b5c6d7e8f90!41-3f3a05a6", "Pager runbook", "2026-11-02T10:00:00Z")
HANDOVER = page("1-b2c3d4e5f60718293a4b5c6d7e8f9001!42-3f3a05a6", "Handover notes", "2026-11-03T10:00:00Z")
BREAD = page("1-c3d4e5f60718293a4b5c6d7e8f900112!43-5a6b7c8d", "Rye bread", "2026-10-01T10:00:00Z")


def html(title: str, body: str) -> str:
    return (f'<html lang="en-US"><head><title>{title}</title><meta http-equiv="Content-Type" '
            f'content="text/html; charset=utf-8" /></head><body data-absolute-enabled="true" style="font-family:Calibri">'
            f'<div id="div:{{4e2b}}" data-id="_default" style="position:absolute;left:48px;top:120px;width:624px">'
            f'<p>{body}</p></div></body></html>')


def check(request) -> None:
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"


def serve(rsps, *, pages_of=None, contents=None):
    pages_of = pages_of or {ONCALL["id"]: [RUNBOOK, HANDOVER], RECIPES["id"]: [BREAD]}
    contents = contents or {RUNBOOK["id"]: html("Pager runbook", "When the quokka alarm fires, restart the ingest "
                                                "workers and page the database owner."),
                            HANDOVER["id"]: html("Handover notes", "Friday handover: the certificate renewal is due."),
                            BREAD["id"]: html("Rye bread", "Mix rye flour, water and the sourdough starter.")}

    def sections(request):
        check(request)
        query = parse_qs(urlsplit(request.url).query)
        assert query["$expand"] == ["parentNotebook($select=id,displayName),parentSectionGroup($select=id,displayName)"]
        return 200, {}, json.dumps({"@odata.nextLink": SECTIONS_NEXT, "value": [ONCALL]})

    rsps.add_callback("GET", SECTIONS, callback=sections, match=[responses.matchers.query_param_matcher(
        {"$select": "id,displayName,self"}, strict_match=False)])
    rsps.add("GET", SECTIONS_NEXT, json={"value": [RECIPES]},
             match=[responses.matchers.query_string_matcher("$skiptoken=1-c2VjdGlvbnM")])
    for section_id, listed in pages_of.items():
        def answer(request, listed=listed):
            check(request)
            query = parse_qs(urlsplit(request.url).query)
            assert query["$top"] == ["100"] and "lastModifiedDateTime" in query["$select"][0]
            return 200, {}, json.dumps({"value": listed})
        rsps.add_callback("GET", f"{SECTIONS}/{section_id}/pages", callback=answer)
    for page_id, text in contents.items():
        rsps.add("GET", f"{GRAPH}/me/onenote/pages/{page_id}/content", body=text, content_type="text/html")


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    monkeypatch.setattr(OneNoteSource, "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def connect(collection, **config):
    return source_connection_create(collection=collection, short_name="onenote", config=config,
                                    credentials={"access_token": TOKEN}, sync_immediately=False, for_api=False)


def run(connection):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)


def test_pages_of_every_section_are_synced_with_breadcrumbs_and_found(rsps, make_collection, client):
    serve(rsps)
    connection = connect(make_collection())
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    runbook = Entity.objects.get(source_connection=connection, entity_id=RUNBOOK["id"])
    assert (runbook.name, runbook.entity_type) == ("Pager runbook", "OneNotePageEntity")
    assert [b["name"] for b in runbook.breadcrumbs] == ["Team notebook", "On-call"]
    assert runbook.web_url.startswith("https://contoso-my.sharepoint.com/:o:/r/")
    bread = Entity.objects.get(source_connection=connection, entity_id=BREAD["id"])
    assert [b["entity_type"] for b in bread.breadcrumbs] == ["OneNoteNotebook", "OneNoteSectionGroup", "OneNoteSection"]
    assert "data-absolute-enabled" not in runbook.chunks.get().text  # the HTML was read, not indexed raw
    r = client.post("/collections/docs/search/instant", {"query": "quokka alarm restart ingest workers", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == RUNBOOK["id"]


def test_the_next_run_downloads_only_changed_pages_and_deletes_the_gone(rsps, make_collection):
    serve(rsps)
    connection = connect(make_collection())
    run(connection)
    rsps.reset()
    edited = {**HANDOVER, "lastModifiedDateTime": "2026-11-20T09:00:00Z"}
    serve(rsps, pages_of={ONCALL["id"]: [RUNBOOK, edited], RECIPES["id"]: []},
          contents={HANDOVER["id"]: html("Handover notes", "Friday handover: renew the wildcard certificate.")})
    job = run(connection)
    assert (job.status, job.entities_updated, job.entities_kept, job.entities_deleted) == \
        ("completed", 1, 1, 1), job.error
    downloads = [c.request.url for c in rsps.calls if c.request.url.endswith("/content")]
    assert downloads == [f"{GRAPH}/me/onenote/pages/{HANDOVER['id']}/content"]
    assert "wildcard" in Entity.objects.get(source_connection=connection, entity_id=HANDOVER["id"]).chunks.get().text


def test_the_notebooks_config_keeps_only_those_notebooks(rsps):
    serve(rsps)
    source = OneNoteSource(OneNoteSource.validate_config({"notebooks": ["personal"]}), {"access_token": TOKEN})
    assert [e.entity_id for e in source.generate_entities({})] == [BREAD["id"]]
    assert not any(f"{ONCALL['id']}/pages" in c.request.url for c in rsps.calls)


def test_a_throttled_listing_is_retried_and_a_refused_token_needs_reauth(rsps, make_collection):
    rsps.add("GET", SECTIONS, status=429, headers={"Retry-After": "0"},
             json={"error": {"code": "20166", "message": "Too many requests."}})
    rsps.add("GET", SECTIONS, json={"value": []})
    source = OneNoteSource(OneNoteSource.validate_config({}), {"access_token": TOKEN})
    assert list(source.generate_entities({})) == []
    rsps.reset()
    rsps.add("GET", SECTIONS, status=401, json={"error": {"code": "InvalidAuthenticationToken",
                                                          "message": "Access token has expired or is not yet valid."}})
    connection = connect(make_collection())
    job = run(connection)
    connection.refresh_from_db()
    assert (job.status, connection.status) == ("failed", "needs_reauth")
