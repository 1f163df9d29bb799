"""The Dropbox source against API v2 responses shaped as Dropbox documents them
(tests/connectors/fixtures/dropbox), served by `responses` at the transport level."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity
from airweave.crypto import decrypt_json
from connectors.base import SourceError, UnreadableEntity
from connectors.services import source_connection_create
from connectors.sources.dropbox import DropboxFileEntity, DropboxSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures" / "dropbox"
API = "https://api.dropboxapi.com/2"
CONTENT = "https://content.dropboxapi.com/2/files/download"
DOCX = SHARED_DATA / "docs_mixed_formats/docling_testdata/docx/sources/word_sample.docx"
GUIDE, PACKING, BUDGET = ("/projects/summer camp/swimming guide.docx", "/projects/summer camp/packing-list.md",
                          "/budget.txt")
PACKING_TEXT = "# Packing list\n\nSunscreen, a reusable water bottle and a head torch for the night hike.\n"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def arg(path: str):
    return [responses.matchers.header_matcher({"Dropbox-API-Arg": json.dumps({"path": path})})]


SHARED = "84528192421"  # the shared folder /projects/summer camp


def serve_dropbox(rsps, packing=PACKING_TEXT, shared=False):
    """The listing and downloads, the account (its owner is bob) and its shared folders: none, or with
    `shared` the Summer camp folder (members bob, alice on the second page, a team group, an invitee carol)."""
    rsps.add("POST", f"{API}/users/get_current_account", json=fixture("current_account.json"))
    if shared:
        rsps.add("POST", f"{API}/sharing/list_folders", json=fixture("shared_folders.json"),
                 match=[responses.matchers.json_params_matcher({"limit": 1000})])
        page1 = fixture("folder_members_page1.json")
        rsps.add("POST", f"{API}/sharing/list_folder_members", json=page1,
                 match=[responses.matchers.json_params_matcher({"shared_folder_id": SHARED, "limit": 1000})])
        rsps.add("POST", f"{API}/sharing/list_folder_members/continue", json=fixture("folder_members_page2.json"),
                 match=[responses.matchers.json_params_matcher({"cursor": page1["cursor"]})])
    else:
        rsps.add("POST", f"{API}/sharing/list_folders", json={"entries": []})
    first, second = fixture("list_folder.json"), fixture("list_folder_continue.json")
    for entry in first["entries"] + second["entries"] if shared else []:
        if entry[".tag"] == "file" and entry["path_lower"].startswith("/projects/summer camp/"):
            entry["sharing_info"] = {"read_only": False, "parent_shared_folder_id": SHARED,
                                     "modified_by": "dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"}
    rsps.add("POST", f"{API}/files/list_folder", json=first, match=[responses.matchers.json_params_matcher(
        {"path": "", "recursive": True, "include_deleted": False, "include_non_downloadable_files": True,
         "limit": 2000})])
    rsps.add("POST", f"{API}/files/list_folder/continue", json=second,
             match=[responses.matchers.json_params_matcher({"cursor": first["cursor"]})])
    rsps.add("GET", CONTENT, body=DOCX.read_bytes(), match=arg("id:a4ayc_80_OEAAAAAAAAAZb"),
             headers={"Dropbox-API-Result": json.dumps({"name": "Swimming guide.docx"})})
    rsps.add("GET", CONTENT, body=packing, match=arg("id:a4ayc_80_OEAAAAAAAAAZc"))
    rsps.add("GET", CONTENT, body="Budget 2024: camp rental 3,400 EUR; buses 1,150 EUR.\n",
             match=arg("id:a4ayc_80_OEAAAAAAAAAZe"))


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config):
    return DropboxSource(DropboxSource.validate_config(config), {"access_token": "sl.test"})


def test_listing_over_two_pages_with_downloads_breadcrumbs_and_skips(rsps):
    serve_dropbox(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert set(entities) == {GUIDE, PACKING, BUDGET, "/projects/camp plan.paper"}
    assert all(isinstance(entities[i], DropboxFileEntity) for i in (GUIDE, PACKING, BUDGET))
    guide = entities[GUIDE]
    assert isinstance(guide, DropboxFileEntity) and guide.path.read_bytes() == DOCX.read_bytes()
    assert [b.as_dict() for b in guide.breadcrumbs] == [
        {"entity_id": "/projects", "name": "Projects", "entity_type": "DropboxFolder"},
        {"entity_id": "/projects/summer camp", "name": "Summer Camp", "entity_type": "DropboxFolder"}]
    assert guide.web_url == "https://www.dropbox.com/home/Projects/Summer%20Camp?preview=Swimming%20guide.docx"
    assert guide.updated_at.isoformat() == "2024-05-02T08:11:12+00:00" and guide.size == 103966
    assert guide.raw_source_fields["dropbox_id"] == "id:a4ayc_80_OEAAAAAAAAAZb"
    paper = entities["/projects/camp plan.paper"]
    assert isinstance(paper, UnreadableEntity) and paper.reason.startswith("unsupported file type")
    assert entities[BUDGET].breadcrumbs == [] and entities[BUDGET].web_url.startswith("https://www.dropbox.com/home?")
    assert source.is_full_listing()
    assert source.next_cursor() == {"cursor": "AAGvDt2WSkpNqf1WgNQ-kqVqNjg6xgO0nvqyBqRqBOBSDrGsH0Dn3l8", "path": "",
                                    "folders": ["/projects", "/projects/summer camp"]}
    assert all(c.request.headers["Authorization"] == "Bearer sl.test" for c in rsps.calls)


def test_429_with_retry_after_is_retried(rsps):
    rsps.add("POST", f"{API}/files/list_folder", status=429, headers={"Retry-After": "0"},
             json={"error_summary": "too_many_requests/..", "error": {"reason": {".tag": "too_many_requests"},
                                                                      "retry_after": 0}})
    serve_dropbox(rsps)
    assert len(list(make().generate_entities({}))) == 4
    assert len([c for c in rsps.calls if c.request.url == f"{API}/files/list_folder"]) == 2


def test_sync_search_refresh_and_incremental_deletion(rsps, make_collection, client):
    token = rsps.add("POST", "https://api.dropboxapi.com/oauth2/token",
                     json={"access_token": "sl.fresh", "token_type": "bearer", "expires_in": 14400})
    rsps.add("POST", f"{API}/files/list_folder", status=401, match=[responses.matchers.header_matcher(
        {"Authorization": "Bearer sl.expired"})], json={"error_summary": "expired_access_token/",
                                                        "error": {".tag": "expired_access_token"}})
    serve_dropbox(rsps)
    connection = source_connection_create(
        collection=make_collection(), short_name="dropbox", sync_immediately=False, for_api=False,
        credentials={"access_token": "sl.expired", "refresh_token": "dbx-refresh", "client_id": "app-key",
                     "client_secret": "app-secret"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 3, 1), job.error
    assert len(token.calls) == 1  # the 401 refreshed the token once
    connection.refresh_from_db()
    assert decrypt_json(connection.encrypted_credentials)["access_token"] == "sl.fresh"
    r = client.post("/collections/docs/search/instant", {"query": "head torch for the night hike", "limit": 2},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == PACKING

    rsps.reset()
    serve_dropbox(rsps, packing=PACKING_TEXT + "Also: a rain jacket.\n")
    rsps.add("POST", f"{API}/files/list_folder/continue", json=fixture("changes.json"),
             match=[responses.matchers.json_params_matcher({"cursor": "AAGvDt2WSkpNqf1WgNQ-kqVqNjg6xgO0nvqyBqRqBOBSDrGsH0Dn3l8"})])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert not Entity.objects.filter(source_connection=connection, entity_id=BUDGET).exists()
    assert not any(c.request.url == f"{API}/files/list_folder" for c in rsps.calls)  # no full listing


def test_a_deleted_folder_or_a_reset_cursor_lists_everything(rsps):
    serve_dropbox(rsps)
    rsps.add("POST", f"{API}/files/list_folder/continue", match=[responses.matchers.json_params_matcher(
        {"cursor": "saved"})], json={"entries": [{".tag": "deleted", "name": "Projects", "path_lower": "/projects",
                                                  "path_display": "/Projects"}], "cursor": "c2", "has_more": False})
    source = make()
    entities = list(source.generate_entities({"cursor": "saved", "path": "", "folders": ["/projects"]}))
    assert len(entities) == 4 and source.is_full_listing() and source.deleted_entity_ids() == []

    rsps.add("POST", f"{API}/files/list_folder/continue", status=409, match=[responses.matchers.json_params_matcher(
        {"cursor": "stale"})], json={"error_summary": "reset/..", "error": {".tag": "reset"}})
    source = make()
    assert len(list(source.generate_entities({"cursor": "stale", "path": ""}))) == 4 and source.is_full_listing()


def test_a_missing_folder_is_a_config_error_and_paths_are_checked(rsps):
    rsps.add("POST", f"{API}/files/list_folder", status=409, json={
        "error_summary": "path/not_found/..", "error": {".tag": "path", "path": {".tag": "not_found"}}})
    with pytest.raises(SourceError) as info:
        list(make(path="/Nope").generate_entities({}))
    assert info.value.category == "config_error"
    with pytest.raises(ValueError, match="must start with /"):
        DropboxSource.validate_config({"path": "Projects"})


# --- access control -------------------------------------------------------------------------------


def test_own_files_are_the_owners_and_a_shared_folders_files_its_members():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        serve_dropbox(rsps, shared=True)
        source = make()
        memberships = [(m.group_id, m.member) for m in source.generate_access_memberships()]
        entities = {e.entity_id: e for e in source.generate_entities({}) if not isinstance(e, UnreadableEntity)}
    assert memberships == [(f"shared_folder:{SHARED}", "user:bob@example.com"),
                           (f"shared_folder:{SHARED}", "group:team_group:g:e2db7665347abcd600000000001a2b3c"),
                           (f"shared_folder:{SHARED}", "user:alice@example.com")]  # not the invitee
    assert entities[BUDGET].access_viewers == ["user:bob@example.com"]
    for path in (GUIDE, PACKING):
        assert entities[path].access_viewers == [f"group:shared_folder:{SHARED}", "user:bob@example.com"]


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: bob's Dropbox, Summer camp shared with alice."""
    from tests.access.test_source_matrix import AclWorld

    serve_dropbox(rsps, shared=True)
    return AclWorld(short_name="dropbox", credentials={"access_token": "sl.test"}, config={},
                    visible={"alice": {GUIDE, PACKING}, "bob": {GUIDE, PACKING, BUDGET}, "carol": set()},
                    everything={GUIDE, PACKING, BUDGET})
