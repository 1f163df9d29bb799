"""The sources that read one kind of file of a drive: Google Docs and Google Slides (Google Drive
narrowed by MIME type), Word and PowerPoint (OneDrive narrowed by extension).

Against the Drive v3 and Graph response shapes of tests/connectors/fixtures/{google_drive,onedrive}:
the Drive fake answers only the listing query of the source's own type (anything else fails the
test), the Graph delta round lists every item and the source must leave the others undownloaded.
Each syncs into a collection that search then finds; the incremental runs keep their type alone.
"""
from __future__ import annotations

import copy
import json

import pytest
import responses

from airweave.collections.models import Entity
from connectors.registry import get_source
from connectors.services import source_connection_create
from connectors.sources._msgraph import GRAPH
from connectors.sync.services import sync_job_run, sync_job_start
from tests.connectors.test_google_drive import API, DOC, ONBOARDING, fixture as drive_fixture, serve_drive
from tests.connectors.test_msgraph import (DOCS, DRIVE, _content, connect, fixture as graph_fixture, onedrive_first_round,
                                          serve_permissions)

DOCUMENT = "application/vnd.google-apps.document"
PRESENTATION = "application/vnd.google-apps.presentation"
DECK = "1RoaSlidesQ3Roadmap000000000000000000000000"
DECK_TEXT = "Q3 roadmap review. Slide 2: the offline mode ships behind a feature flag. Speaker notes: ask legal."


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    for short_name in ("google_docs", "google_slides", "word", "powerpoint"):
        monkeypatch.setattr(get_source(short_name), "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def run(connection):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)


def _deck() -> dict:
    return {"id": DECK, "name": "Q3 roadmap", "mimeType": PRESENTATION, "parents": ["0AMyDriveRootFolder00Uk9PVA"],
            "createdTime": "2025-06-02T08:00:00.000Z", "modifiedTime": "2025-06-20T16:45:10.000Z",
            "webViewLink": f"https://docs.google.com/presentation/d/{DECK}/edit?usp=drivesdk", "version": "12",
            "owners": [{"emailAddress": "dana@example.com", "displayName": "Dana Kim"}],
            "permissions": [{"id": "1", "type": "user", "role": "owner", "emailAddress": "dana@example.com"}]}


def serve_typed_listing(rsps, mime: str):
    """Drive's files.list for one type: the folders' query and this type's query, nothing else."""
    every_file = drive_fixture("files_page1.json")["files"] + drive_fixture("files_page2.json")["files"] + [_deck()]

    def listing(request):
        query = request.params["q"]
        if query == "trashed = false and mimeType = 'application/vnd.google-apps.folder'":
            return 200, {}, json.dumps(drive_fixture("folders.json"))
        assert query == f"trashed = false and (mimeType = '{mime}')", query
        return 200, {}, json.dumps({"files": [f for f in every_file if f["mimeType"] == mime]})

    rsps.replace(responses.CallbackResponse("GET", f"{API}/files", callback=listing))


def test_google_docs_lists_only_documents_and_keeps_only_them_from_the_changes(rsps, make_collection, client):
    serve_drive(rsps)
    serve_typed_listing(rsps, DOCUMENT)
    connection = source_connection_create(collection=make_collection(), short_name="google_docs",
                                          sync_immediately=False, authentication={"access_token": "ya29.a0-test"})
    job = run(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 1, 0), job.error_details
    doc = Entity.objects.get(source_connection=connection)
    assert (doc.entity_id, doc.entity_type) == (DOC, "GoogleDocsDocumentEntity")
    assert [b["name"] for b in doc.breadcrumbs] == ["My Drive", "Team Handbook"]
    assert {"user:alice@example.com", "user:bruno@example.com"} <= set(doc.access_viewers) and any(
        v.startswith("group:") and v.endswith(":eng-team@example.com") for v in doc.access_viewers)  # Drive sharing
    assert not any("/export" in c.request.url and DOC not in c.request.url for c in rsps.calls)
    r = client.post("/collections/docs/search/instant", {"query": "onboarding buddy release checklist", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == DOC

    # changes.json: the document edited, a PDF removed, a text file edited: only the document is read.
    rsps.reset()
    serve_drive(rsps, onboarding=ONBOARDING + " Also: expense reports are due on the 5th.")
    rsps.add("GET", f"{API}/changes", json=drive_fixture("changes.json"))
    job = run(connection)
    assert (job.status, job.entities_updated, job.entities_inserted, job.entities_deleted) == \
        ("completed", 1, 0, 0), job.error_details
    assert not any("roadmap" in c.request.url.lower() or "1ShrTxt" in c.request.url for c in rsps.calls)
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == [DOC]


def test_google_slides_lists_only_presentations_exported_as_text(rsps, make_collection, client):
    serve_drive(rsps)
    serve_typed_listing(rsps, PRESENTATION)
    rsps.add("GET", f"{API}/files/{DECK}/export", body=DECK_TEXT, content_type="text/plain",
             match=[responses.matchers.query_param_matcher({"mimeType": "text/plain"})])
    connection = source_connection_create(collection=make_collection(), short_name="google_slides",
                                          sync_immediately=False, authentication={"access_token": "ya29.a0-test"})
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 1), job.error_details
    deck = Entity.objects.get(source_connection=connection)
    assert (deck.entity_id, deck.entity_type, deck.name) == (DECK, "GoogleSlidesPresentationEntity", "Q3 roadmap")
    assert deck.web_url.startswith("https://docs.google.com/presentation/d/")
    r = client.post("/collections/docs/search/instant", {"query": "offline mode feature flag", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == DECK


def test_word_indexes_only_docx_files_and_downloads_nothing_else(rsps, make_collection, client):
    items = onedrive_first_round(rsps)
    connection = connect(make_collection(), "word")
    job = run(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 1, 0), job.error
    docx = Entity.objects.get(source_connection=connection)
    assert (docx.entity_id, docx.entity_type) == (items["word_sample.docx"], "WordDocumentEntity")
    assert [b["name"] for b in docx.breadcrumbs] == ["OneDrive", "Specs"]
    downloaded = [c.request.url for c in rsps.calls if c.request.url.endswith("/content")]
    assert downloaded == [f"{GRAPH}/drives/{DRIVE}/items/{items['word_sample.docx']}/content"]
    r = client.post("/collections/docs/search/instant", {"query": "swimming in the lake paddle about", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == items["word_sample.docx"]


def test_powerpoint_indexes_only_pptx_files(rsps, make_collection, client):
    page_2 = graph_fixture("onedrive/delta_page_2.json")
    deck = copy.deepcopy(page_2["value"][0])
    deck.update(id="01BYE5RZ2DECKROADMAPQ3PPTX0000000", name="powerpoint_sample.pptx", size=48213,
                cTag='"c:{5D2B7A10-3C4E-4F6A-8B9C-0D1E2F3A4B5C},1"',
                webUrl="https://contoso-my.sharepoint.com/personal/meganb/Documents/powerpoint_sample.pptx",
                file={"mimeType": "application/vnd.openxmlformats-officedocument.presentationml.presentation"})
    page_2["value"].append(deck)
    page_1 = graph_fixture("onedrive/delta_page_1.json")
    rsps.add("GET", f"{GRAPH}/me/drive?%24select=id%2Cname%2CwebUrl", json=graph_fixture("onedrive/drive.json"))
    rsps.add("GET", f"{GRAPH}/drives/{DRIVE}/root/delta", json=page_1)
    rsps.add("GET", page_1["@odata.nextLink"], json=page_2)
    _content(rsps, deck["id"], (DOCS / "pptx/sources/powerpoint_sample.pptx").read_bytes())
    serve_permissions(rsps)
    connection = connect(make_collection(), "powerpoint")
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 1), job.error
    entity = Entity.objects.get(source_connection=connection)
    assert (entity.entity_id, entity.entity_type) == (deck["id"], "PowerPointPresentationEntity")
    assert [c.request.url for c in rsps.calls if c.request.url.endswith("/content")] == [
        f"{GRAPH}/drives/{DRIVE}/items/{deck['id']}/content"]
    r = client.post("/collections/docs/search/instant", {"query": "a rectangle shape with this text inside",
                                                        "limit": 3}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == deck["id"]


def test_the_narrowed_sources_declare_their_drive_sources_auth_and_notifications(client):
    listed = {s["short_name"]: s for s in client.get("/sources").json()}
    for narrow, wide in (("google_docs", "google_drive"), ("google_slides", "google_drive"),
                         ("word", "onedrive"), ("powerpoint", "onedrive")):
        assert listed[narrow]["auth_methods"] == listed[wide]["auth_methods"]
        assert get_source(narrow).notifications is get_source(wide).notifications
        assert get_source(narrow).supports_continuous
