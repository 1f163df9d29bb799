"""Microsoft Teams against Graph's documented response shapes (tests/connectors/fixtures/teams/), served by
`responses` at the transport level: joined teams, channels, delta rounds of channel messages over two
@odata.nextLink pages, replies, throttling, token refresh, `@removed` / soft-deleted messages, a 410 resync,
private-channel access, and a search over the synced conversation."""
from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import responses

from airweave.collections.models import AccessGroupMembership, Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.services import source_connection_create
from connectors.sources._msgraph import GRAPH
from connectors.sources.teams import TeamsSource, html_to_text
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "teams"
TOKEN_URL = "https://login.microsoftonline.com/common/oauth2/v2.0/token"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


TEAM = fixture("joined_teams")["value"][0]["id"]
GENERAL, PRIVATE = (c["id"] for c in fixture("channels")["value"])
R1, R2 = (m["id"] for m in fixture("general_delta_page_1")["value"])
R3 = fixture("general_delta_page_2")["value"][0]["id"]
P1 = fixture("private_delta")["value"][0]["id"]
R1A, R1B = (m["id"] for m in fixture("replies_r1")["value"])
CH = f"{GRAPH}/teams/{TEAM}/channels"


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    monkeypatch.setattr(TeamsSource, "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def run(connection, force_full_sync=False):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, force_full_sync=force_full_sync,
                                              enqueue=False).id)


def connect(collection, config=None, **credentials):
    return source_connection_create(collection=collection, short_name="teams", config=config or {},
                                    credentials={"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6IlRlYW1z", **credentials},
                                    sync_immediately=False, for_api=False)


def members(name: str, emails: dict[str, str] | None = None) -> dict:
    """A members fixture; `emails` ({display name: address}) gives some members another address."""
    body = fixture(name)
    for member in body["value"]:
        member["email"] = (emails or {}).get(member["displayName"], member["email"])
    return body


def listing(rsps, emails: dict[str, str] | None = None):
    rsps.add("GET", f"{GRAPH}/me/joinedTeams?%24select=id%2CdisplayName%2Cdescription%2CwebUrl",
             json=fixture("joined_teams"))
    rsps.add("GET", f"{CH}?%24select=id%2CdisplayName%2Cdescription%2CmembershipType%2CwebUrl%2CcreatedDateTime",
             json=fixture("channels"))
    rsps.add("GET", f"{GRAPH}/teams/{TEAM}/members", json=members("team_members", emails))
    rsps.add("GET", f"{CH}/{PRIVATE}/members", json=members("private_channel_members", emails))


def replies(rsps, channel, root, name="replies_empty"):
    rsps.add("GET", f"{CH}/{channel}/messages/{root}/replies?%24top=50", json=fixture(name))


def first_round(rsps, *, throttle=False, emails=None):
    listing(rsps, emails)
    rsps.add("GET", f"{CH}/{GENERAL}/messages/delta?%24top=50", json=fixture("general_delta_page_1"))
    next_link = fixture("general_delta_page_1")["@odata.nextLink"]
    if throttle:  # Graph throttling: 429 with Retry-After, then the page
        rsps.add("GET", next_link, status=429, headers={"Retry-After": "0"}, json={"error": {
            "code": "TooManyRequests", "message": "Too many requests from Identifier:... under category:..."}})
    rsps.add("GET", next_link, json=fixture("general_delta_page_2"))
    replies(rsps, GENERAL, R1, "replies_r1")
    replies(rsps, GENERAL, R2)
    replies(rsps, GENERAL, R3)
    rsps.add("GET", f"{CH}/{PRIVATE}/messages/delta?%24top=50", json=fixture("private_delta"))
    replies(rsps, PRIVATE, P1)


def test_html_bodies_become_text():
    assert html_to_text('<p>Thanks <at id="0">Megan Bowen</at>,</p><div>see<br>below</div>') == \
        "Thanks Megan Bowen,\nsee\nbelow"


def test_teams_channels_messages_and_replies_are_synced_and_found(rsps, make_collection, client):
    first_round(rsps, throttle=True)
    connection = connect(make_collection())
    job = run(connection)
    # 1 team + 2 channels + 4 root messages (the system event left out) + 2 replies
    assert (job.status, job.entities_inserted) == ("completed", 9), job.error
    assert [c.response.status_code for c in rsps.calls if "skiptoken" in c.request.url] == [429, 200]

    reply = Entity.objects.get(source_connection=connection, entity_id=f"{GENERAL}/{R1}/{R1A}")
    assert [b["name"] for b in reply.breadcrumbs] == ["Mark 8 Project Team", "General", "Launch date moved"]
    assert [b["entity_type"] for b in reply.breadcrumbs] == ["TeamsTeamEntity", "TeamsChannelEntity",
                                                            "TeamsMessageEntity"]
    assert reply.raw_source_fields["is_reply"] is True and reply.raw_source_fields["thread_id"] == R1
    assert reply.raw_source_fields["author"] == "Adele Vance"
    assert reply.web_url.startswith("https://teams.microsoft.com/l/message/") and f"parentMessageId={R1}" in reply.web_url
    root = Entity.objects.get(source_connection=connection, entity_id=f"{GENERAL}/{R3}")
    assert root.raw_source_fields["attachments"] == ["Water test.docx"]
    assert root.source_created_at.isoformat().startswith("2021-03-29T07:05:24.862")
    assert not Entity.objects.filter(source_connection=connection, entity_id__endswith="1617003003135").exists()

    r = client.post("/collections/docs/search/instant",
                    {"query": "drone prototype water resistance test", "limit": 1}, format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == f"{GENERAL}/{R3}"
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data["channels"]
    assert cursor[GENERAL]["delta_link"] == fixture("general_delta_page_2")["@odata.deltaLink"]
    assert cursor[GENERAL]["threads"][R1]["replies"] == [R1A, R1B]


def test_private_channels_are_visible_to_their_members_only(rsps, make_collection):
    from airweave.collections.access import principals_for_user
    from airweave.tenancy.models import User

    first_round(rsps)
    collection = make_collection()
    connection = connect(collection)
    assert run(connection).status == "completed"
    private = Entity.objects.get(source_connection=connection, entity_id=f"{PRIVATE}/{P1}")
    assert (private.access_viewers, private.access_is_public) == ([f"group:{connection.id}:{PRIVATE}"], False)
    general = Entity.objects.get(source_connection=connection, entity_id=f"{GENERAL}/{R1}")
    assert general.access_viewers == [f"group:{connection.id}:{TEAM}"]
    members = set(AccessGroupMembership.objects.filter(source_connection=connection, group_id=PRIVATE)
                  .values_list("member", flat=True))
    assert members == {"user:meganb@m365x214355.onmicrosoft.com", "user:leeg@m365x214355.onmicrosoft.com"}
    adele = User.objects.create_user(email="AdeleV@M365x214355.onmicrosoft.com", password="x")
    principals = principals_for_user(user=adele, organization=collection.organization)
    assert f"group:{connection.id}:{TEAM}" in principals and f"group:{connection.id}:{PRIVATE}" not in principals


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: alice (Megan Bowen) is in the team and its private
    channel, bob (Adele Vance) in the team only, carol in neither."""
    from tests.access.test_source_matrix import AclWorld

    first_round(rsps, emails={"Megan Bowen": "alice@example.com", "Adele Vance": "bob@example.com"})
    team = {TEAM, GENERAL, f"{GENERAL}/{R1}", f"{GENERAL}/{R2}", f"{GENERAL}/{R3}", f"{GENERAL}/{R1}/{R1A}",
            f"{GENERAL}/{R1}/{R1B}"}
    private = {PRIVATE, f"{PRIVATE}/{P1}"}
    return AclWorld(short_name="teams", credentials={"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6IlRlYW1z"},
                    config={}, visible={"alice": team | private, "bob": team, "carol": set()},
                    everything=team | private)


def test_next_run_follows_delta_links_updates_and_deletes(rsps, make_collection):
    first_round(rsps)
    connection = connect(make_collection())
    assert run(connection).entities_inserted == 9
    rsps.reset()
    listing(rsps)
    rsps.add("GET", fixture("general_delta_page_2")["@odata.deltaLink"], json=fixture("general_delta_incremental"))
    replies(rsps, GENERAL, R1, "replies_r1_incremental")
    rsps.add("GET", fixture("private_delta")["@odata.deltaLink"], json=fixture("private_delta_incremental"))
    job = run(connection)
    # R1 edited; R2 @removed; R1's second reply soft-deleted
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 2), job.error
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert f"{GENERAL}/{R2}" not in ids and f"{GENERAL}/{R1}/{R1B}" not in ids
    assert {f"{GENERAL}/{R1}", f"{GENERAL}/{R3}", f"{GENERAL}/{R1}/{R1A}", f"{PRIVATE}/{P1}"} <= ids
    edited = Entity.objects.get(source_connection=connection, entity_id=f"{GENERAL}/{R1}")
    assert edited.source_updated_at.isoformat().startswith("2021-04-02T08:00:00.117")


def test_an_expired_delta_link_starts_a_full_round_and_a_gone_channel_is_deleted(rsps, make_collection):
    first_round(rsps)
    connection = connect(make_collection())
    run(connection)
    rsps.reset()
    rsps.add("GET", f"{GRAPH}/me/joinedTeams?%24select=id%2CdisplayName%2Cdescription%2CwebUrl",
             json=fixture("joined_teams"))
    channels = fixture("channels")
    channels["value"] = channels["value"][:1]  # the private channel was deleted
    rsps.add("GET", f"{CH}?%24select=id%2CdisplayName%2Cdescription%2CmembershipType%2CwebUrl%2CcreatedDateTime",
             json=channels)
    rsps.add("GET", f"{GRAPH}/teams/{TEAM}/members", json=fixture("team_members"))
    rsps.add("GET", fixture("general_delta_page_2")["@odata.deltaLink"], status=410, json=fixture("delta_gone"))
    page = fixture("general_delta_page_1")  # R2 is gone from the new full round
    page["value"] = page["value"][:1]
    page["@odata.deltaLink"] = page.pop("@odata.nextLink")
    rsps.add("GET", f"{CH}/{GENERAL}/messages/delta?%24top=50", json=page)
    replies(rsps, GENERAL, R1, "replies_r1")
    job = run(connection)
    # gone: R2, R3 (not in the full round), the private channel and its message
    assert (job.status, job.entities_deleted) == ("completed", 4), job.error
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {TEAM, GENERAL, f"{GENERAL}/{R1}", f"{GENERAL}/{R1}/{R1A}", f"{GENERAL}/{R1}/{R1B}"}


def test_an_expired_token_is_refreshed_and_the_rotated_refresh_token_saved(rsps, make_collection):
    first_round(rsps)
    rsps.add("POST", TOKEN_URL, json={"token_type": "Bearer", "scope": "ChannelMessage.Read.All", "expires_in": 4493,
                                      "ext_expires_in": 4493, "access_token": "eyJ0eXAi.new",
                                      "refresh_token": "0.AX0A-rotated"})
    connection = connect(make_collection(), refresh_token="0.AX0A-first", expires_at=time.time() - 60,
                         client_id="6731de76-14a6-49ae-97bc-6eba6914391e", client_secret="JqQX2PNo9bpM0uEihUPzyrh")
    job = run(connection)
    assert job.status == "completed", job.error
    refresh = next(c.request for c in rsps.calls if c.request.url == TOKEN_URL)
    assert parse_qs(refresh.body)["refresh_token"] == ["0.AX0A-first"]
    assert all(c.request.headers.get("Authorization") == "Bearer eyJ0eXAi.new" for c in rsps.calls
               if c.request.url.startswith(GRAPH))
    stored = decrypt_json(type(connection).objects.get(pk=connection.pk).encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("eyJ0eXAi.new", "0.AX0A-rotated")


def test_config_is_checked_and_declared(client):
    with pytest.raises(ValueError, match="reply_lookback_days"):
        TeamsSource.validate_config({"reply_lookback_days": -1})
    body = client.get("/sources/teams").json()
    assert body["auth_methods"] == ["oauth_browser", "oauth_token", "oauth_byoc"]
    assert {f["name"] for f in body["config_fields"]["fields"]} == {"teams", "include_private_channels",
                                                                    "reply_lookback_days"}


def test_graph_times_with_fractions_keep_their_offset():
    from datetime import timezone

    from connectors.sources._msgraph import graph_time

    assert graph_time("2021-03-29T07:05:24.862Z").tzinfo == timezone.utc
    assert graph_time("2024-05-01T10:00:00.1234567Z").microsecond == 123456
