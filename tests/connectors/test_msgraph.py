"""The Microsoft Graph sources (OneDrive, SharePoint, Outlook mail) against Graph's documented response shapes
(tests/connectors/fixtures/<source>/), served by `responses` at the transport level: @odata.nextLink pages,
delta rounds and @odata.deltaLink cursors, `@removed` / `deleted` items, 410 resync, throttling, token refresh,
files downloaded through the pipeline's converters, and searches over the synced content."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.services import source_connection_create
from connectors.sources._msgraph import GRAPH, graph_time
from connectors.sources.onedrive import OneDriveSource
from connectors.sources.outlook_mail import OutlookMailSource
from connectors.sources.sharepoint import SharePointSource
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures"
DOCS = SHARED_DATA / "docs_mixed_formats" / "docling_testdata"
TOKEN_URL = "https://login.microsoftonline.com/common/oauth2/v2.0/token"


def fixture(path: str) -> dict:
    return json.loads((FIXTURES / path).read_text())


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    for cls in (OneDriveSource, OutlookMailSource, SharePointSource):
        monkeypatch.setattr(cls, "rate_limit_level", None)


@pytest.fixture
def rsps():
    # Not every run reads every route a round registers (the groups and permissions of files left unchanged).
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def run(connection, force_full_sync=False):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, force_full_sync=force_full_sync,
                                              enqueue=False).id)


def connect(collection, short_name, config=None, **credentials):
    return source_connection_create(collection=collection, short_name=short_name, config=config or {},
                                    credentials={"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA",
                                                 **credentials},
                                    sync_immediately=False, for_api=False)


def query_of(url: str) -> dict:
    return parse_qs(url.partition("?")[2])


# --- OneDrive -----------------------------------------------------------------------------------

DRIVE = fixture("onedrive/drive.json")["id"]
HANDBOOK = SHARED_DATA / "docs_18f_handbook"


def _content(rsps, item_id: str, body: bytes, drive: str = DRIVE):
    """/content answers 302 to a pre-authenticated download URL, as Graph does."""
    download = f"https://contoso-my.sharepoint.com/personal/meganb/_layouts/15/download.aspx?UniqueId={item_id}"
    rsps.add("GET", f"{GRAPH}/drives/{drive}/items/{item_id}/content", status=302, headers={"Location": download})
    rsps.add("GET", download, body=body, content_type="application/octet-stream")


MEGAN = {"displayName": "Megan Bowen", "email": "MeganB@contoso.com", "id": "48d31887-5fad-4d73-a9f5-3c356e68a038"}
OWNER = {"id": "aTowIy5mfG1lbWJlcnNoaXB8bWVnYW5iQGNvbnRvc28uY29t", "roles": ["owner"], "shareId": "s!owner",
         "grantedToV2": {"user": MEGAN, "siteUser": {"displayName": "Megan Bowen", "email": "MeganB@contoso.com",
                                                     "id": "11", "loginName": "i:0#.f|membership|meganb@contoso.com"}},
         "grantedTo": {"user": MEGAN}}


def permission(permission_id: str, roles=("read",), *, user=None, group=None, site_group=None, link=None,
               identities=(), inherited=None) -> dict:
    """A Graph `permission` resource as `GET /drives/{d}/items/{i}/permissions` lists it."""
    out = {"id": permission_id, "roles": list(roles)}
    granted = {}
    if user:
        granted["user"] = user
    if group:
        granted["group"] = group
    if site_group:
        granted["siteGroup"] = site_group
    if granted:
        out["grantedToV2"] = granted
    if link:
        out.update(link={"scope": link, "type": "view", "webUrl": f"https://contoso.sharepoint.com/:w:/s/{permission_id}",
                         "preventsDownload": False}, hasPassword=False, shareId=f"s!{permission_id}",
                   grantedToIdentitiesV2=[{"user": i} for i in identities])
    if inherited:
        out["inheritedFrom"] = inherited
    return out


def serve_permissions(rsps, permissions: dict | None = None, groups: dict | None = None):
    """Every item's permissions (`permissions` {item id: [...]}, else the owner only) and the tenant's groups
    (`groups` {group: (display name, [members])}, none by default)."""
    permissions, groups = permissions or {}, groups or {}

    def answer(request):
        item_id = re.search(r"/items/([^/]+)/permissions", request.url).group(1)
        return 200, {"Content-Type": "application/json"}, json.dumps(
            {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(permission)",
             "value": permissions.get(item_id, [OWNER])})

    rsps.add_callback("GET", re.compile(rf"{re.escape(GRAPH)}/drives/[^/]+/items/[^/]+/permissions"), callback=answer)
    rsps.add("GET", f"{GRAPH}/groups?%24select=id%2CdisplayName", json={
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#groups(id,displayName)",
        "value": [{"id": g, "displayName": name} for g, (name, _) in groups.items()]})
    for group_id, (_, members) in groups.items():
        rsps.add("GET", f"{GRAPH}/groups/{group_id}/members?%24select=id%2Cmail%2CuserPrincipalName", json={
            "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#directoryObjects(id,mail,userPrincipalName)",
            "value": members})


def _leave_policy() -> bytes:
    page = next(p for p in sorted(HANDBOOK.rglob("*.md")) if "leave" in p.name.lower())
    return page.read_bytes()


def onedrive_first_round(rsps, *, throttle=False, permissions=None, groups=None):
    serve_permissions(rsps, permissions, groups)
    rsps.add("GET", f"{GRAPH}/me/drive?%24select=id%2Cname%2CwebUrl", json=fixture("onedrive/drive.json"))
    rsps.add("GET", f"{GRAPH}/drives/{DRIVE}/root/delta", json=fixture("onedrive/delta_page_1.json"))
    page_1 = fixture("onedrive/delta_page_1.json")
    if throttle:  # Graph throttling: 429 with Retry-After, then the page
        rsps.add("GET", page_1["@odata.nextLink"], status=429, headers={"Retry-After": "0"},
                 json={"error": {"code": "activityLimitReached", "message": "The request has been throttled"}})
    rsps.add("GET", page_1["@odata.nextLink"], json=fixture("onedrive/delta_page_2.json"))
    items = {i["name"]: i["id"] for p in ("delta_page_1", "delta_page_2") for i in fixture(f"onedrive/{p}.json")["value"]}
    _content(rsps, items["word_sample.docx"], (DOCS / "docx/sources/word_sample.docx").read_bytes())
    _content(rsps, items["leave-policy.md"], _leave_policy())
    _content(rsps, items["old-notes.txt"], b"Parking moved to level 3.\n")
    return items


def test_onedrive_syncs_files_through_the_converters_and_finds_them(rsps, make_collection, client):
    items = onedrive_first_round(rsps, throttle=True)
    connection = connect(make_collection(), "onedrive")
    job = run(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 3, 1), job.error
    # the 700 MB scan was skipped by size, never downloaded
    assert "file too large" in json.dumps(job.error_details)
    assert not any(items["scan-archive.pdf"] in c.request.url for c in rsps.calls)
    assert [c.response.status_code for c in rsps.calls if "token=" in c.request.url][:2] == [429, 200]

    docx = Entity.objects.get(source_connection=connection, entity_id=items["word_sample.docx"])
    assert docx.name == "word_sample.docx" and docx.entity_type == "OneDriveFileEntity"
    assert [b["name"] for b in docx.breadcrumbs] == ["OneDrive", "Specs"]
    assert docx.web_url.endswith("/Documents/word_sample.docx")
    assert docx.raw_source_fields["last_modified_by"] == "Megan Bowen"

    r = client.post("/collections/docs/search/instant", {"query": "swimming in the lake paddle about", "limit": 3},
                    format="json")
    top = r.json()["results"][0]
    assert top["airweave_system_metadata"]["original_entity_id"] == items["word_sample.docx"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["drive"]["delta_link"] == \
        fixture("onedrive/delta_page_2.json")["@odata.deltaLink"]


def test_onedrive_next_run_follows_the_delta_link_updates_and_deletes(rsps, make_collection):
    items = onedrive_first_round(rsps)
    connection = connect(make_collection(), "onedrive")
    assert run(connection).entities_inserted == 3
    rsps.reset()

    serve_permissions(rsps)
    rsps.add("GET", f"{GRAPH}/me/drive?%24select=id%2Cname%2CwebUrl", json=fixture("onedrive/drive.json"))
    rsps.add("GET", fixture("onedrive/delta_page_2.json")["@odata.deltaLink"],
             json=fixture("onedrive/delta_incremental.json"))
    _content(rsps, items["leave-policy.md"], _leave_policy() + b"\n\nUpdated: carry-over is capped at 240 hours.\n")
    job = run(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    names = set(Entity.objects.filter(source_connection=connection).values_list("name", flat=True))
    assert names == {"word_sample.docx", "leave-policy.md"}
    # the unchanged .docx was neither listed nor downloaded again
    assert not any(items["word_sample.docx"] in c.request.url for c in rsps.calls)
    policy = Entity.objects.get(source_connection=connection, entity_id=items["leave-policy.md"])
    assert [b["name"] for b in policy.breadcrumbs] == ["OneDrive"]  # folders kept in the cursor


def test_onedrive_expired_delta_link_starts_a_full_round(rsps, make_collection):
    onedrive_first_round(rsps)
    connection = connect(make_collection(), "onedrive")
    run(connection)
    rsps.reset()
    serve_permissions(rsps)
    rsps.add("GET", f"{GRAPH}/me/drive?%24select=id%2Cname%2CwebUrl", json=fixture("onedrive/drive.json"))
    rsps.add("GET", fixture("onedrive/delta_page_2.json")["@odata.deltaLink"], status=410,
             json=fixture("onedrive/delta_gone.json"))
    page = fixture("onedrive/delta_page_1.json")
    page["@odata.deltaLink"] = page.pop("@odata.nextLink")  # old-notes.txt is gone from the drive
    page["value"].append(fixture("onedrive/delta_page_2.json")["value"][0])
    rsps.add("GET", f"{GRAPH}/drives/{DRIVE}/root/delta", json=page)
    job = run(connection)
    # a full round: what it does not list is deleted; the rest is kept by cTag, without downloads
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 2, 1), job.error
    assert not any("/content" in c.request.url for c in rsps.calls)


# --- SharePoint ---------------------------------------------------------------------------------

SP = {"sites": fixture("sharepoint/sites_page_1.json"), "drives": fixture("sharepoint/drives_mark8.json")}


def sharepoint_first_round(rsps, permissions=None, groups=None):
    serve_permissions(rsps, permissions, groups)
    site = SP["sites"]["value"][0]
    rsps.add("GET", f"{GRAPH}/sites?search=%2A&%24select=id%2CdisplayName%2Cname%2CwebUrl", json=SP["sites"])
    rsps.add("GET", SP["sites"]["@odata.nextLink"], json=fixture("sharepoint/sites_page_2.json"))
    rsps.add("GET", f"{GRAPH}/sites/{site['id']}/drives?%24select=id%2Cname%2CwebUrl%2CdriveType", json=SP["drives"])
    archive = fixture("sharepoint/sites_page_2.json")["value"][0]
    rsps.add("GET", f"{GRAPH}/sites/{archive['id']}/drives?%24select=id%2Cname%2CwebUrl%2CdriveType",
             json=fixture("sharepoint/drives_archive.json"))
    drive = SP["drives"]["value"][0]["id"]
    rsps.add("GET", f"{GRAPH}/drives/{drive}/root/delta", json=fixture("sharepoint/delta.json"))
    items = {i["name"]: i["id"] for i in fixture("sharepoint/delta.json")["value"]}
    _content(rsps, items["word_tables.docx"], (DOCS / "docx/sources/word_tables.docx").read_bytes(), drive)
    _content(rsps, items["launch-checklist.txt"], b"Launch checklist: book the venue, brief the press.\n", drive)
    return items


def test_sharepoint_sites_drives_and_items_then_a_deletion(rsps, make_collection, client):
    items = sharepoint_first_round(rsps)
    connection = connect(make_collection(), "sharepoint")
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    doc = Entity.objects.get(source_connection=connection, entity_id=items["word_tables.docx"])
    assert [b["name"] for b in doc.breadcrumbs] == ["Mark 8 Project Team", "Documents", "Launch"]
    assert [b["entity_type"] for b in doc.breadcrumbs] == ["SharePointSite", "SharePointDrive", "OneDriveFolder"]
    assert doc.raw_source_fields["site_name"] == "Mark 8 Project Team"
    r = client.post("/collections/docs/search/instant", {"query": "launch checklist venue press", "limit": 1},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == items["launch-checklist.txt"]

    rsps.reset()
    serve_permissions(rsps)
    rsps.add("GET", f"{GRAPH}/sites?search=%2A&%24select=id%2CdisplayName%2Cname%2CwebUrl",
             json={**SP["sites"], "@odata.nextLink": None})
    site = SP["sites"]["value"][0]
    rsps.add("GET", f"{GRAPH}/sites/{site['id']}/drives?%24select=id%2Cname%2CwebUrl%2CdriveType", json=SP["drives"])
    rsps.add("GET", fixture("sharepoint/delta.json")["@odata.deltaLink"], json=fixture("sharepoint/delta_incremental.json"))
    job = run(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("name", flat=True)) == \
        ["word_tables.docx"]


def test_sharepoint_an_unknown_site_is_a_config_error(rsps, make_collection):
    rsps.add("GET", f"{GRAPH}/sites/contoso.sharepoint.com:/sites/Nope:?%24select=id%2CdisplayName%2Cname%2CwebUrl",
             status=404, json={"error": {"code": "itemNotFound", "message": "Requested site could not be found"}})
    job = run(connect(make_collection(), "sharepoint", {"sites": ["contoso.sharepoint.com:/sites/Nope"]}))
    assert (job.status, job.error_category) == ("failed", "config_error")


# --- Outlook mail -------------------------------------------------------------------------------

OM = "outlook_mail"
FOLDERS = fixture(f"{OM}/mail_folders.json")["value"]
INBOX, SENT = FOLDERS[0]["id"], FOLDERS[1]["id"]
PROJECTS = fixture(f"{OM}/inbox_child_folders.json")["value"][0]["id"]
SELECT = "%24select=" + "subject%2Cfrom%2CtoRecipients%2CccRecipients%2CreceivedDateTime%2CsentDateTime%2CcreatedDateTime%2ClastModifiedDateTime%2Cbody%2CbodyPreview%2ChasAttachments%2CwebLink%2CconversationId%2CinternetMessageId%2Cimportance%2Ccategories%2CparentFolderId"
MESSAGES = fixture(f"{OM}/inbox_delta_page_1.json")["value"] + fixture(f"{OM}/inbox_delta_page_2.json")["value"] + \
    fixture(f"{OM}/projects_delta.json")["value"]


def outlook_folders(rsps):
    rsps.add("GET", f"{GRAPH}/me/mailFolders?%24top=100", json=fixture(f"{OM}/mail_folders.json"))
    rsps.add("GET", f"{GRAPH}/me/mailFolders/{INBOX}/childFolders?%24top=100", json=fixture(f"{OM}/inbox_child_folders.json"))


def outlook_first_round(rsps):
    outlook_folders(rsps)
    page_1 = fixture(f"{OM}/inbox_delta_page_1.json")
    prefer = responses.matchers.header_matcher({"Prefer": 'IdType="ImmutableId", odata.maxpagesize=50, '
                                                          'outlook.body-content-type="text"'})
    rsps.add("GET", f"{GRAPH}/me/mailFolders/{INBOX}/messages/delta?{SELECT}", json=page_1, match=[prefer])
    rsps.add("GET", page_1["@odata.nextLink"], json=fixture(f"{OM}/inbox_delta_page_2.json"))
    rsps.add("GET", f"{GRAPH}/me/mailFolders/{PROJECTS}/messages/delta?{SELECT}", json=fixture(f"{OM}/projects_delta.json"))
    rsps.add("GET", f"{GRAPH}/me/mailFolders/{SENT}/messages/delta?{SELECT}", json=fixture(f"{OM}/sent_delta.json"))
    with_files = MESSAGES[1]["id"]
    attachments = fixture(f"{OM}/attachments.json")
    base = f"{GRAPH}/me/messages/{with_files}/attachments"
    rsps.add("GET", f"{base}?%24select=id%2Cname%2CcontentType%2Csize%2CisInline%2ClastModifiedDateTime", json=attachments)
    pdf = attachments["value"][0]["id"]
    rsps.add("GET", f"{base}/{pdf}/$value", body=(DOCS / "pdf/sources/amt_handbook_sample.pdf").read_bytes(),
             content_type="application/pdf")
    return f"{with_files}/attachments/{pdf}"


def test_outlook_messages_by_folder_with_attachments_are_searchable(rsps, make_collection, client):
    attachment_id = outlook_first_round(rsps)
    connection = connect(make_collection(), "outlook_mail")
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error  # 4 messages + the PDF (not the inline image)

    moved = Entity.objects.get(source_connection=connection, entity_id=MESSAGES[3]["id"])
    assert [b["name"] for b in moved.breadcrumbs] == ["Inbox", "R packages"]
    assert moved.name == "[R-pkg-devel] Removing packages files"
    assert moved.web_url.startswith("https://outlook.office365.com/owa/?ItemID=")
    assert moved.source_created_at == graph_time(MESSAGES[3]["receivedDateTime"])
    assert moved.raw_source_fields["folder"] == "R packages"
    pdf = Entity.objects.get(source_connection=connection, entity_id=attachment_id)
    assert pdf.entity_type == "OutlookAttachmentEntity" and pdf.breadcrumbs[-1]["entity_type"] == "OutlookMessageEntity"

    r = client.post("/collections/docs/search/instant",
                    {"query": "tools::cleanup_R_user_dir wipes package subfolders", "limit": 1}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == MESSAGES[3]["id"]
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor["folders"][INBOX] == fixture(f"{OM}/inbox_delta_page_2.json")["@odata.deltaLink"]
    assert cursor["attachments"] == {MESSAGES[1]["id"]: [attachment_id]}


def test_outlook_removed_messages_are_deleted_with_their_attachments_and_moves_are_kept(rsps, make_collection):
    attachment_id = outlook_first_round(rsps)
    connection = connect(make_collection(), "outlook_mail")
    assert run(connection).entities_inserted == 5
    rsps.reset()
    outlook_folders(rsps)
    for name, folder in (("inbox", INBOX), ("projects", PROJECTS), ("sent", SENT)):
        link = fixture(f"{OM}/{name}_delta{'_page_2' if name == 'inbox' else ''}.json")["@odata.deltaLink"]
        rsps.add("GET", link, json=fixture(f"{OM}/{name}_delta_incremental.json"))
    job = run(connection)
    # message 0 and message 1 (with its PDF) deleted; message 2 only read (kept); message 3 moved (kept)
    assert (job.status, job.entities_deleted, job.entities_updated, job.entities_kept) == ("completed", 3, 1, 1), \
        job.error
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {MESSAGES[2]["id"], MESSAGES[3]["id"]} and attachment_id not in ids
    moved = Entity.objects.get(source_connection=connection, entity_id=MESSAGES[3]["id"])
    assert [b["name"] for b in moved.breadcrumbs] == ["Inbox"]


# --- every Graph source: an expired token is refreshed, the rotated refresh token saved --------------

@pytest.mark.parametrize("short_name", ["onedrive", "sharepoint", "outlook_mail"])
def test_an_expired_token_is_refreshed_and_the_rotated_refresh_token_saved(short_name, rsps, make_collection):
    {"onedrive": onedrive_first_round, "sharepoint": sharepoint_first_round, "outlook_mail": outlook_first_round}[
        short_name](rsps)
    rsps.add("POST", TOKEN_URL, json={"token_type": "Bearer", "scope": "Files.Read.All Mail.Read Sites.Read.All",
                                      "expires_in": 4493, "ext_expires_in": 4493, "access_token": "eyJ0eXAi.new",
                                      "refresh_token": "0.AX0A-rotated"})
    connection = connect(make_collection(), short_name, refresh_token="0.AX0A-first", expires_at=time.time() - 60,
                         client_id="6731de76-14a6-49ae-97bc-6eba6914391e", client_secret="JqQX2PNo9bpM0uEihUPzyrh")
    job = run(connection)
    assert job.status == "completed", job.error
    refresh = next(c.request for c in rsps.calls if c.request.url == TOKEN_URL)
    assert parse_qs(refresh.body)["refresh_token"] == ["0.AX0A-first"]
    assert all(c.request.headers.get("Authorization") == "Bearer eyJ0eXAi.new" for c in rsps.calls
               if c.request.url.startswith(GRAPH))
    stored = decrypt_json(type(connection).objects.get(pk=connection.pk).encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("eyJ0eXAi.new", "0.AX0A-rotated")


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    for url in (f"{GRAPH}/groups?%24select=id%2CdisplayName", f"{GRAPH}/me/drive?%24select=id%2Cname%2CwebUrl"):
        rsps.add("GET", url, status=401, json={"error": {
            "code": "InvalidAuthenticationToken", "message": "Access token has expired or is not yet valid."}})
    connection = connect(make_collection(), "onedrive")
    job = run(connection)
    connection.refresh_from_db()
    assert (job.status, connection.status) == ("failed", "needs_reauth")


# --- access control: OneDrive and SharePoint item permissions and Entra groups ---------------------------------

ALICE = {"displayName": "Alice Example", "email": "Alice@Example.com", "id": "a1a1a1a1-0000-4000-8000-000000000001"}
BOB = {"@odata.type": "#microsoft.graph.user", "id": "b2b2b2b2-0000-4000-8000-000000000002", "mail": None,
       "userPrincipalName": "bob@example.com"}
TEAM = "5d4c4ac4-0ec8-45b3-9ac6-2e01f3b50a7c"  # Mark 8 Project Team, holds the Launch crew group
CREW = "7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b"  # Launch crew, holds bob


def onedrive_acl(rsps):
    """word_sample.docx shared with alice; leave-policy.md with the Mark 8 Project Team group (whose nested
    Launch crew holds bob) and the Visitors site group; old-notes.txt behind an organization link."""
    items = {i["name"]: i["id"] for p in ("delta_page_1", "delta_page_2") for i in fixture(f"onedrive/{p}.json")["value"]}
    onedrive_first_round(rsps, permissions={
        items["word_sample.docx"]: [OWNER, permission("aTow", ["write"], user=ALICE)],
        items["leave-policy.md"]: [OWNER, permission("aTox", group={"displayName": "Mark 8 Project Team", "id": TEAM,
                                                                   "email": "Mark8ProjectTeam@contoso.com"},
                                                     inherited={"driveId": DRIVE, "id": "01BYE5RZ2", "path": "/"}),
                                   permission("aToy", site_group={"displayName": "Visitors", "id": "5",
                                                                  "loginName": "Visitors"})],
        items["old-notes.txt"]: [OWNER, permission("aToz", link="organization")],
    }, groups={TEAM: ("Mark 8 Project Team", [{"@odata.type": "#microsoft.graph.group", "id": CREW, "mail": None,
                                               "userPrincipalName": None}]),
               CREW: ("Launch crew", [BOB])})
    return items


def test_onedrive_files_carry_their_permissions_and_groups_are_listed_nested():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        items = onedrive_acl(mock)
        source = OneDriveSource({}, {"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"})
        memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
        entities = {e.entity_id: e for e in source.generate_entities({})}
        asked = [c.request.url for c in mock.calls if "/permissions" in c.request.url]
    assert memberships == {(TEAM, f"group:{CREW}"), (CREW, "user:bob@example.com")}
    assert entities[items["word_sample.docx"]].access_viewers == ["user:alice@example.com", "user:meganb@contoso.com"]
    assert entities[items["leave-policy.md"]].access_viewers == [f"group:{TEAM}", "user:meganb@contoso.com"]
    notes = entities[items["old-notes.txt"]]
    assert notes.access_is_public and notes.access_viewers == ["user:meganb@contoso.com"]
    assert not any(items["scan-archive.pdf"] in url for url in asked)  # too large to index: not asked


def test_without_the_right_to_list_groups_no_group_member_is_mirrored(rsps):
    rsps.add("GET", f"{GRAPH}/groups?%24select=id%2CdisplayName", status=403, json={"error": {
        "code": "Authorization_RequestDenied", "message": "Insufficient privileges to complete the operation."}})
    assert OneDriveSource({}, {"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"}
                          ).generate_access_memberships() == []


def onedrive_world(rsps):
    """The access world of tests/access/test_source_matrix.py for OneDrive (see onedrive_acl)."""
    from tests.access.test_source_matrix import AclWorld

    items = onedrive_acl(rsps)
    docx, policy, notes = items["word_sample.docx"], items["leave-policy.md"], items["old-notes.txt"]
    return AclWorld(short_name="onedrive", credentials={"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"},
                    config={}, visible={"alice": {docx, notes}, "bob": {policy, notes}, "carol": {notes}},
                    everything={docx, policy, notes})


def sharepoint_world(rsps):
    """The access world of tests/access/test_source_matrix.py for SharePoint: the checklist for the Launch crew
    (bob), the tables document for alice."""
    from tests.access.test_source_matrix import AclWorld

    items = {i["name"]: i["id"] for i in fixture("sharepoint/delta.json")["value"]}
    tables, checklist = items["word_tables.docx"], items["launch-checklist.txt"]
    sharepoint_first_round(rsps, permissions={
        tables: [permission("aTo1", user=ALICE)],
        checklist: [permission("aTo2", group={"displayName": "Launch crew", "id": CREW})],
    }, groups={CREW: ("Launch crew", [BOB])})
    return AclWorld(short_name="sharepoint", credentials={"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"},
                    config={}, visible={"alice": {tables}, "bob": {checklist}, "carol": set()},
                    everything={tables, checklist})
