"""The Box source against Content API 2.0 responses shaped as Box documents them
(tests/connectors/fixtures/box), served by `responses` at the transport level: marker
pagination, the download redirect, the event stream, and rotating refresh tokens persisted."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity
from airweave.crypto import decrypt_json
from connectors.base import SourceError
from connectors.services import source_connection_create
from connectors.sources.box import BoxFileEntity, BoxSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures" / "box"
API = "https://api.box.com/2.0"
PPTX = SHARED_DATA / "docs_mixed_formats/docling_testdata/pptx/sources/powerpoint_sample.pptx"
LEAVE = "# Leave policy\n\nEmployees accrue 25 days of paid leave a year; request leave two weeks ahead in the HR portal.\n"
NOTES = "Vendor notes: the cloud contract renews on 1 July; negotiate a three-year discount.\n"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def params(**values):
    return [responses.matchers.query_param_matcher(values, strict_match=False)]


def collaboration(collaboration_id: str, item: dict, accessible_by: dict, status: str = "accepted") -> dict:
    """A collaboration as Box documents it (`GET /files|folders/{id}/collaborations` entries)."""
    return {"type": "collaboration", "id": collaboration_id, "status": status, "role": "editor",
            "created_by": {"type": "user", "id": "17738362", "name": "Dana Kim", "login": "dana@example.com"},
            "created_at": "2024-01-12T09:00:00-08:00", "modified_at": "2024-01-12T09:00:00-08:00",
            "expires_at": None, "acknowledged_at": "2024-01-12T09:05:00-08:00", "invite_email": None,
            "accessible_by": accessible_by, "item": item}


def serve_box(rsps, notes=NOTES, collaborations=None, groups=None):
    """The folder tree, downloads and event position; `collaborations` {(files|folders, id): [entries]} (none
    by default) and `groups` {group: [members' user objects]} (none by default)."""
    collaborations, groups = collaborations or {}, groups or {}

    def collaborations_of(request):
        kind, item_id = re.search(r"/(files|folders)/(\d+)/collaborations", request.url).groups()
        entries = collaborations.get((kind, item_id), [])
        return 200, {"Content-Type": "application/json"}, json.dumps(
            {"entries": entries, "limit": 1000, "next_marker": None})

    rsps.add_callback("GET", re.compile(rf"{re.escape(API)}/(files|folders)/\d+/collaborations(\?.*)?"),
                      callback=collaborations_of)
    rsps.add("GET", f"{API}/groups", match=params(offset="0"), json={
        "total_count": len(groups), "limit": 1000, "offset": 0,
        "entries": [{"type": "group", "id": g["id"], "name": g["name"], "group_type": "managed_group"}
                    for g in groups]})
    for group, members in ((g, g["members"]) for g in groups):
        rsps.add("GET", f"{API}/groups/{group['id']}/memberships", match=params(offset="0"), json={
            "total_count": len(members), "limit": 1000, "offset": 0, "entries": [
                {"type": "group_membership", "id": f"15603{i}", "user": user, "role": "member",
                 "group": {"type": "group", "id": group["id"], "name": group["name"], "group_type": "managed_group"},
                 "created_at": "2024-01-02T09:00:00-08:00", "modified_at": "2024-01-02T09:00:00-08:00"}
                for i, user in enumerate(members)]})
    rsps.add("GET", f"{API}/events", json=fixture("events_now.json"), match=params(stream_position="now"))
    page1 = fixture("root_items_page1.json")
    rsps.add("GET", f"{API}/folders/0/items", json=fixture("root_items_page2.json"),
             match=params(marker=page1["next_marker"]))
    rsps.add("GET", f"{API}/folders/0/items", json=page1, match=params(usemarker="true", limit="1000"))
    rsps.add("GET", f"{API}/folders/11446498/items", json=fixture("handbook_items.json"))
    signed = "https://dl.boxcloud.com/d/1/b1!r4nD0m-s1gn3d/download"
    rsps.add("GET", f"{API}/files/12345678/content", status=302, headers={"Location": signed})
    rsps.add("GET", signed, body=PPTX.read_bytes())
    rsps.add("GET", f"{API}/files/12345679/content", status=302,
             headers={"Location": "https://dl.boxcloud.com/d/1/b1!n0t3s/download"})
    rsps.add("GET", "https://dl.boxcloud.com/d/1/b1!n0t3s/download", body=notes)
    rsps.add("GET", f"{API}/files/22334455/content", status=302,
             headers={"Location": "https://dl.boxcloud.com/d/1/b1!l34v3/download"})
    rsps.add("GET", "https://dl.boxcloud.com/d/1/b1!l34v3/download", body=LEAVE)


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config):
    return BoxSource(BoxSource.validate_config(config), {"access_token": "box-token"})


def test_folders_walked_with_marker_pagination_and_redirected_downloads(rsps):
    serve_box(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert set(entities) == {"12345678", "12345679", "22334455"}  # the web link is not a file
    deck = entities["12345678"]
    assert isinstance(deck, BoxFileEntity) and deck.path.read_bytes() == PPTX.read_bytes()
    assert deck.web_url == "https://app.box.com/file/12345678" and deck.breadcrumbs == []
    assert deck.updated_at.isoformat() == "2024-01-12T10:53:43-08:00"
    leave = entities["22334455"]
    assert [b.as_dict() for b in leave.breadcrumbs] == [{"entity_id": "11446498", "name": "Handbook",
                                                         "entity_type": "BoxFolder"}]
    assert leave.raw_source_fields["modified_by"] == "alice@example.com"
    assert entities["12345679"].raw_source_fields["shared_link_access"] == "company"
    # The signed download URL gets no bearer token.
    assert "Authorization" not in next(c for c in rsps.calls if "dl.boxcloud.com" in c.request.url).request.headers
    assert source.is_full_listing()
    assert source.next_cursor() == {"stream_position": "1152922976252290886", "folder_id": "0"}


def test_429_with_retry_after_is_retried(rsps):
    rsps.add("GET", f"{API}/folders/11446498/items", status=429, headers={"Retry-After": "0"}, json={
        "type": "error", "status": 429, "code": "rate_limit_exceeded", "message": "Request rate limit exceeded, "
        "please try again later", "request_id": "abcdef123456"})
    serve_box(rsps)
    assert len(list(make().generate_entities({}))) == 3


def test_rotating_refresh_tokens_are_persisted_then_events_update_and_delete(rsps, make_collection, client):
    serve_box(rsps)
    token = rsps.add("POST", "https://api.box.com/oauth2/token", json={
        "access_token": "box-new", "expires_in": 3600, "restricted_to": [], "token_type": "bearer",
        "refresh_token": "box-refresh-2"})
    connection = source_connection_create(
        collection=make_collection(), short_name="box", sync_immediately=False, for_api=False,
        credentials={"access_token": "box-old", "refresh_token": "box-refresh-1", "expires_at": time.time() - 1,
                     "client_id": "box-client", "client_secret": "box-secret"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert "refresh_token=box-refresh-1" in token.calls[0].request.body
    connection.refresh_from_db()
    stored = decrypt_json(connection.encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("box-new", "box-refresh-2")  # rotated and kept

    r = client.post("/collections/docs/search/instant", {"query": "how many days of paid leave", "limit": 2},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == "22334455"

    rsps.reset()
    serve_box(rsps, notes=NOTES + "Update: legal approved the renewal.\n")
    rsps.add("GET", f"{API}/events", json={"chunk_size": 0, "next_stream_position": "1152923110164312445",
                                           "entries": []}, match=params(stream_position="1152923110164312445"))
    rsps.add("GET", f"{API}/events", json=fixture("events_changes.json"),
             match=params(stream_type="changes", stream_position="1152922976252290886"))
    item = fixture("root_items_page2.json")["entries"][0]
    rsps.add("GET", f"{API}/files/12345679", json={**item, "sequence_id": "2", "size": 124,
                                                  "content_modified_at": "2024-02-02T10:00:00-08:00"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert not Entity.objects.filter(source_connection=connection, entity_id="22334455").exists()
    assert not any("/folders/" in c.request.url for c in rsps.calls)  # no listing
    assert connection.sync.cursor.data["stream_position"] == "1152923110164312445"


def test_a_folder_event_lists_everything_and_a_missing_folder_is_a_config_error(rsps):
    serve_box(rsps)
    rsps.add("GET", f"{API}/events", match=params(stream_type="changes"), json={
        "chunk_size": 1, "next_stream_position": "2", "entries": [
            {"type": "event", "event_id": "e1", "event_type": "ITEM_MOVE",
             "source": {"type": "folder", "id": "11446498", "name": "Handbook"}}]})
    source = make()
    assert len(list(source.generate_entities({"stream_position": "1", "folder_id": "0"}))) == 3
    assert source.is_full_listing()

    rsps.add("GET", f"{API}/folders/999/items", status=404, json={
        "type": "error", "status": 404, "code": "not_found", "message": "Not Found"})
    with pytest.raises(SourceError) as info:
        list(make(folder_id="999").generate_entities({}))
    assert info.value.category == "config_error"


# --- access control -------------------------------------------------------------------------------

ALICE = {"type": "user", "id": "20001", "name": "Alice", "login": "Alice@Example.com"}
BOB = {"type": "user", "id": "20002", "name": "Bob", "login": "bob@example.com"}
CAROL = {"type": "user", "id": "20003", "name": "Carol", "login": "carol@example.com"}
PEOPLE = {"type": "group", "id": "5001", "name": "People team", "group_type": "managed_group"}


def serve_shared_box(rsps):
    """The deck shared with alice; the Handbook folder with the People team (bob) and a pending invite to
    carol; vendor notes behind a company shared link."""
    deck = {"type": "file", "id": "12345678", "etag": "1", "name": "Sales kickoff.pptx"}
    handbook = {"type": "folder", "id": "11446498", "etag": "1", "name": "Handbook"}
    serve_box(rsps, collaborations={
        ("files", "12345678"): [collaboration("991", deck, ALICE)],
        ("folders", "11446498"): [collaboration("992", handbook, PEOPLE),
                                  collaboration("993", handbook, CAROL, status="pending")],
    }, groups=[{"id": "5001", "name": "People team", "members": [BOB]}])


def test_owners_collaborators_inherited_folder_collaborations_groups_and_company_links():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        serve_shared_box(rsps)
        source = make()
        assert [(m.group_id, m.member) for m in source.generate_access_memberships()] == [
            ("5001", "user:bob@example.com")]
        entities = {e.entity_id: e for e in source.generate_entities({})}
    assert entities["12345678"].access_viewers == ["user:alice@example.com", "user:dana@example.com"]
    assert entities["22334455"].access_viewers == ["group:5001", "user:dana@example.com"]  # not carol: pending
    assert (entities["12345679"].access_viewers, entities["12345679"].access_is_public) == ([], True)


def test_without_the_right_to_list_groups_no_group_member_is_mirrored(rsps):
    rsps.add("GET", f"{API}/groups", status=403, json={"type": "error", "status": 403, "code": "access_denied_"
                                                       "insufficient_permissions", "message": "Access denied"})
    assert make().generate_access_memberships() == []


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py (see serve_shared_box)."""
    from tests.access.test_source_matrix import AclWorld

    serve_shared_box(rsps)
    return AclWorld(short_name="box", credentials={"access_token": "box-token"}, config={},
                    visible={"alice": {"12345678", "12345679"}, "bob": {"12345679", "22334455"}, "carol": {"12345679"}},
                    everything={"12345678", "12345679", "22334455"})
