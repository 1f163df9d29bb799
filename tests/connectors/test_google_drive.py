"""The Google Drive source against Drive v3 responses shaped as Google documents them
(tests/connectors/fixtures/google_drive), served by `responses` at the transport level: two
listing pages, exports and downloads, breadcrumbs, permissions, the changes feed, rate limits,
token refresh, and a sync into a collection that search then finds."""
from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity
from airweave.crypto import decrypt_json
from connectors.base import AuthFailure, UnreadableEntity
from connectors.services import source_connection_create
from connectors.sources.google_drive import GoogleDriveFileEntity, GoogleDriveSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures" / "google_drive"
API = "https://www.googleapis.com/drive/v3"
PDF = SHARED_DATA / "docs_mixed_formats/docling_testdata/pdf/sources/multi_page.pdf"
DOC, PDF_ID, SHEET = ("1OnbDocOnboardingGuide00000000000000000000", "1ExpPdfExpensePolicy000000000000",
                      "1BudSheetBudget2025000000000000000000000000")
PNG, TXT = "1PhoPngTeamPhoto0000000000000000", "1ShrTxtRoadmapSharedWithMe000000"
ONBOARDING = ("Welcome to the team. Your first week: set up your laptop, read the security handbook and "
              "pair with your onboarding buddy on the release checklist.")


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def google_error(code: int, reason: str, message: str, status: str) -> dict:
    return {"error": {"code": code, "message": message, "status": status,
                      "errors": [{"message": message, "domain": "usageLimits" if code == 403 else "global",
                                  "reason": reason}]}}


def budget_xlsx() -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Travel"
    sheet.append(["Line", "Amount (EUR)"])
    sheet.append(["Conference travel to Lisbon", 4200])
    book.create_sheet("Hardware").append(["Developer laptops", 18000])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def files_listing(request, changes=None):
    """files.list of the fixtures; `changes` ({file id: fields}) overrides some fields of some files."""
    query = dict(request.params)
    if "mimeType = 'application/vnd.google-apps.folder'" in query["q"]:
        return 200, {}, json.dumps(fixture("folders.json"))
    assert "trashed = false" in query["q"] and query["pageSize"] == "100"
    page = "files_page2.json" if query.get("pageToken") == "~!!~AI9FV7RtpRZ6rX0UrYyBgqWbFu_page2" else "files_page1.json"
    body = fixture(page)
    body["files"] = [{**item, **(changes or {}).get(item["id"], {})} for item in body["files"]]
    return 200, {}, json.dumps(body)


def serve_drive(rsps, *, onboarding=ONBOARDING, changes=None):
    """Register the Drive API of the fixtures (any number of calls); `changes` as in files_listing."""
    rsps.add("GET", f"{API}/changes/startPageToken", json=fixture("start_page_token.json"))
    rsps.add_callback("GET", f"{API}/files", callback=lambda request: files_listing(request, changes))
    rsps.add("GET", f"{API}/files/0AMyDriveRootFolder00Uk9PVA", json={"id": "0AMyDriveRootFolder00Uk9PVA",
                                                                   "name": "My Drive"})
    for folder in fixture("folders.json")["files"]:  # files.get of folders (incremental runs)
        rsps.add("GET", f"{API}/files/{folder['id']}", json=folder)
    rsps.add("GET", f"{API}/files/0BSharedFolderNotVisible000000", status=404,
             json=google_error(404, "notFound", "File not found: 0BSharedFolderNotVisible000000.", "NOT_FOUND"))
    rsps.add("GET", f"{API}/files/{DOC}/export", body=onboarding, content_type="text/plain",
             match=[responses.matchers.query_param_matcher({"mimeType": "text/plain"})])
    rsps.add("GET", f"{API}/files/{SHEET}/export", body=budget_xlsx(),
             content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    rsps.add("GET", f"{API}/files/{PDF_ID}", body=PDF.read_bytes(), content_type="application/pdf",
             match=[responses.matchers.query_param_matcher({"alt": "media", "supportsAllDrives": "true"})])
    rsps.add("GET", f"{API}/files/{TXT}", body="Roadmap notes: the mobile app ships in Q3, after the API freeze.\n",
             content_type="text/plain")
    rsps.add("GET", f"{API}/about", json={"user": {"displayName": "Dana Kim", "emailAddress": "dana@example.com"}})


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config) -> GoogleDriveSource:
    return GoogleDriveSource(GoogleDriveSource.validate_config(config), {"access_token": "ya29.a0-test"})


def test_two_pages_of_files_with_exports_downloads_breadcrumbs_and_access(rsps):
    serve_drive(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert set(entities) == {DOC, PDF_ID, SHEET, PNG, TXT}
    assert all(isinstance(entities[i], GoogleDriveFileEntity) for i in (DOC, PDF_ID, SHEET, TXT))
    doc = entities[DOC]
    assert doc.name == "Onboarding guide" and doc.path.read_text() == ONBOARDING
    assert doc.web_url.startswith("https://docs.google.com/document/d/")
    assert [b.name for b in doc.breadcrumbs] == ["My Drive", "Team Handbook"]
    assert doc.breadcrumbs[-1].entity_type == "GoogleDriveFolder"
    assert doc.created_at.isoformat() == "2024-11-04T09:12:33.512000+00:00"
    assert doc.access_viewers == ["group:eng-team@example.com", "user:alice@example.com", "user:bruno@example.com"]
    assert doc.access_is_public is False
    assert doc.raw_source_fields["last_modified_by"] == "bruno@example.com" and doc.raw_source_fields["starred"]

    pdf = entities[PDF_ID]
    assert [b.name for b in pdf.breadcrumbs] == ["My Drive", "Team Handbook", "Policies"]
    assert pdf.path.read_bytes() == PDF.read_bytes() and pdf.size == 128322
    assert pdf.access_is_public is True  # "anyone with the link"
    sheet = entities[SHEET]
    assert sheet.path.suffix == ".xlsx" and sheet.access_is_public is True  # a domain permission
    assert isinstance(entities[PNG], UnreadableEntity) and entities[PNG].reason == "unsupported file type: .png"
    shared = entities[TXT]  # shared with me: Drive gives no permissions, the parent is not visible
    assert shared.breadcrumbs == [] and shared.access_viewers == ["user:carol@partner.example.org",
                                                                  "user:dana@example.com"]

    assert source.is_full_listing() and source.next_cursor() == {"start_page_token": "5012", "shared_drives": False}
    listing = [c.request for c in rsps.calls if c.request.url.startswith(f"{API}/files?")]
    assert len(listing) == 3  # folders, then two pages of files
    assert all(c.request.headers["Authorization"] == "Bearer ya29.a0-test" for c in rsps.calls)
    # The start token is taken before the listing, so changes made meanwhile are read next time.
    assert rsps.calls[0].request.url.startswith(f"{API}/changes/startPageToken")


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: the onboarding guide is shared with alice (its owner),
    bruno and the eng-team group (bob and carol are not in it); the PDF has an anyone link and the budget a domain
    permission for example.com; the roadmap notes are Carol's, shared with the connected user (Dana)."""
    from tests.access.test_source_matrix import AclWorld

    serve_drive(rsps, changes={TXT: {"owners": [{"displayName": "Carol Ng", "emailAddress": "carol@example.com"}]}})
    public = {PDF_ID, SHEET}
    return AclWorld(short_name="google_drive", credentials={"access_token": "ya29.a0-test"}, config={},
                    visible={"alice": public | {DOC}, "bob": public, "carol": public | {TXT}},
                    everything=public | {DOC, TXT})


def test_429_with_retry_after_and_google_403_rate_limits_are_retried(rsps):
    rsps.add("GET", f"{API}/changes/startPageToken", status=429, headers={"Retry-After": "0"},
             json=google_error(429, "rateLimitExceeded", "Rate Limit Exceeded", "RESOURCE_EXHAUSTED"))
    rsps.add("GET", f"{API}/changes/startPageToken", status=403,
             json=google_error(403, "userRateLimitExceeded", "User Rate Limit Exceeded", "PERMISSION_DENIED"))
    rsps.add("GET", f"{API}/changes/startPageToken", json=fixture("start_page_token.json"))
    rsps.add("GET", f"{API}/files", json={"files": []})
    source = make()
    slept = []
    source.http.sleep = slept.append
    assert list(source.generate_entities({})) == []
    assert len([c for c in rsps.calls if "startPageToken" in c.request.url]) == 3
    assert len(slept) == 2 and slept[0] < 1.0  # Retry-After: 0 (plus at most 10% jitter), then a backoff
    assert source.next_cursor()["start_page_token"] == "5012"


def test_a_grant_without_the_drive_scope_is_insufficient_scope(rsps):
    rsps.add("GET", f"{API}/changes/startPageToken", status=403, json={"error": {
        "code": 403, "message": "Request had insufficient authentication scopes.", "status": "PERMISSION_DENIED",
        "errors": [{"message": "Insufficient Permission", "domain": "global", "reason": "insufficientPermissions"}],
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
                     "domain": "googleapis.com"}]}})
    with pytest.raises(AuthFailure) as info:
        list(make().generate_entities({}))
    assert info.value.category == "insufficient_scope"


def test_an_expired_access_token_is_refreshed_and_stored(rsps, make_collection):
    serve_drive(rsps)
    token = rsps.add("POST", "https://oauth2.googleapis.com/token", json={
        "access_token": "ya29.a0-fresh", "expires_in": 3599, "token_type": "Bearer",
        "scope": "https://www.googleapis.com/auth/drive.readonly"})
    connection = source_connection_create(
        collection=make_collection(), short_name="google_drive", sync_immediately=False, for_api=False,
        credentials={"access_token": "ya29.a0-expired", "refresh_token": "1//0g-refresh", "expires_at": time.time() - 60,
                     "client_id": "123-abc.apps.googleusercontent.com", "client_secret": "GOCSPX-secret"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert job.status == "completed", job.error
    assert len(token.calls) == 1 and "grant_type=refresh_token" in token.calls[0].request.body
    api_calls = [c for c in rsps.calls if c.request.url.startswith(API)]
    assert {c.request.headers["Authorization"] for c in api_calls} == {"Bearer ya29.a0-fresh"}
    connection.refresh_from_db()
    stored = decrypt_json(connection.encrypted_credentials)
    assert stored["access_token"] == "ya29.a0-fresh" and stored["refresh_token"] == "1//0g-refresh"


def test_sync_then_search_then_changes_update_and_delete(rsps, make_collection, client):
    serve_drive(rsps)
    connection = source_connection_create(
        collection=make_collection(), short_name="google_drive", sync_immediately=False,
        authentication={"access_token": "ya29.a0-test"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 4, 1), job.error_details
    assert job.error_details["skipped"]["unsupported file type"]["count"] == 1

    r = client.post("/collections/docs/search/instant", {"query": "onboarding buddy release checklist", "limit": 3},
                    format="json")
    top = r.json()["results"][0]
    assert top["airweave_system_metadata"]["original_entity_id"] == DOC
    r = client.post("/collections/docs/search/instant", {"query": "typewriter patented by Christopher Latham Sholes",
                                                        "limit": 3}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == PDF_ID
    r = client.post("/collections/docs/search/instant", {"query": "conference travel Lisbon budget", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == SHEET

    # The next run reads the changes feed from the saved token: one edit, one removal, one trashed file.
    rsps.reset()
    serve_drive(rsps, onboarding=ONBOARDING + " Also: expense reports are due on the 5th.")
    rsps.add("GET", f"{API}/changes", json=fixture("changes.json"),
             match=[responses.matchers.query_param_matcher({"pageToken": "5012", "includeRemoved": "true"},
                                                           strict_match=False)])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 2), job.error_details
    assert not any(c.request.url.startswith(f"{API}/files?") for c in rsps.calls)  # no listing
    assert sorted(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == sorted(
        [DOC, SHEET])
    assert connection.sync.cursor.data["start_page_token"] == "5020"


def test_an_expired_changes_token_falls_back_to_a_full_listing(rsps):
    serve_drive(rsps)
    rsps.add("GET", f"{API}/changes", status=410,
             json=google_error(410, "deleted", "The page token is no longer valid.", "GONE"))
    source = make()
    entities = list(source.generate_entities({"start_page_token": "17", "shared_drives": False}))
    assert len(entities) == 5 and source.is_full_listing()
    assert source.next_cursor()["start_page_token"] == "5012"


def test_shared_drives_are_listed_with_all_drives_and_use_the_drive_members(rsps):
    item = {"id": "1SdDocSpec", "name": "API spec", "mimeType": "application/vnd.google-apps.document",
            "driveId": "0ASharedDriveEng000Uk9PVA", "parents": ["0ASharedDriveEng000Uk9PVA"],
            "modifiedTime": "2025-01-01T00:00:00.000Z", "webViewLink": "https://docs.google.com/document/d/1SdDocSpec/edit"}
    rsps.add("GET", f"{API}/changes/startPageToken", json=fixture("start_page_token.json"),
             match=[responses.matchers.query_param_matcher({"supportsAllDrives": "true",
                                                            "includeItemsFromAllDrives": "true"})])
    rsps.add("GET", f"{API}/files", json={"files": []},
             match=[responses.matchers.query_param_matcher({"corpora": "allDrives"}, strict_match=False),
                    responses.matchers.query_param_matcher({"q": "trashed = false and mimeType = "
                                                                 "'application/vnd.google-apps.folder'"},
                                                           strict_match=False)])
    rsps.add("GET", f"{API}/files", json={"files": [item]},
             match=[responses.matchers.query_param_matcher({"corpora": "allDrives"}, strict_match=False)])
    rsps.add("GET", f"{API}/files/0ASharedDriveEng000Uk9PVA", json={"id": "0ASharedDriveEng000Uk9PVA",
                                                                 "name": "Engineering"})
    rsps.add("GET", f"{API}/files/1SdDocSpec/export", body="The API spec.")
    rsps.add("GET", f"{API}/files/0ASharedDriveEng000Uk9PVA/permissions", json={"permissions": [
        {"id": "1", "type": "group", "role": "organizer", "emailAddress": "eng@example.com"},
        {"id": "2", "type": "user", "role": "fileOrganizer", "emailAddress": "Erin@Example.com"}]})
    [entity] = list(make(include_shared_drives=True).generate_entities({}))
    assert entity.breadcrumbs[0].name == "Engineering" and entity.raw_source_fields["drive_id"]
    assert entity.access_viewers == ["group:eng@example.com", "user:erin@example.com"]


def test_a_domain_permission_opens_a_file_for_the_connected_users_domain_only(rsps):
    """A file shared with another company's domain is not open to this organization (dana is at example.com)."""
    partner = [{"id": "07340823598702538481", "type": "user", "role": "owner", "emailAddress": "alice@example.com"},
               {"id": "18234567890123456789k", "type": "domain", "role": "reader", "domain": "partner.example.org"}]
    serve_drive(rsps, changes={PDF_ID: {"permissions": partner}})
    entities = {e.entity_id: e for e in make().generate_entities({})}
    assert (entities[PDF_ID].access_viewers, entities[PDF_ID].access_is_public) == (["user:alice@example.com"], False)
    assert entities[SHEET].access_is_public is True  # a domain permission for example.com
    assert len([c for c in rsps.calls if c.request.url.startswith(f"{API}/about")]) == 1
