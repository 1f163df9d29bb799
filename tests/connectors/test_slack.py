"""The Slack source against a Slack Web API built from a real workspace export (tests/connectors/slack_api.py),
served by `responses` at the transport level: pagination, threads, access, incremental runs and deletions,
429s, expired and refused tokens, a sync into search, and federated search merged into pipeline results."""
from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

import pytest
import responses
from django.test import override_settings

from airweave.collections.models import AccessGroupMembership, Entity, SourceConnection, SyncCursor
from airweave.crypto import decrypt_json
from connectors.base import AuthFailure
from connectors.services import source_connection_create
from connectors.sources.slack import SlackChannelEntity, SlackMessageEntity, SlackSource, permalink
from connectors.sync.services import sync_job_run, sync_job_start
from tests.conftest import SHARED_DATA
from tests.connectors import slack_api as slack
from tests.connectors.recorded import add_recorded, load_recorded
from tests.connectors.test_github import add_repository

PRIVATE = {"is_private": True, "is_channel": False}


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    """The declared 50/minute budget would make a test wait; 429 handling is what is tested here."""
    monkeypatch.setattr(SlackSource, "rate_limit_level", None)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def make(credentials=None, **config) -> SlackSource:
    return SlackSource(SlackSource.validate_config(config), credentials or {"access_token": "xoxp-test"})


def run(connection, force_full_sync=False):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, force_full_sync=force_full_sync,
                                              enqueue=False).id)


def connect(collection, config=None, **credentials):
    return source_connection_create(collection=collection, short_name="slack", config=config or {},
                                    credentials={"access_token": "xoxp-test", **credentials},
                                    sync_immediately=False, for_api=False)


def test_channels_messages_and_threads_over_paginated_listings(rsps):
    conversations = {"help": slack.channel("help"), "discussions": slack.channel("discussions", **PRIVATE)}
    slack.add_workspace(rsps, conversations, history_pages=2, list_pages=2, members_of=["discussions"])
    source = make()
    memberships = list(source.generate_access_memberships())
    entities = list(source.generate_entities({}))

    # users.list, conversations.list and conversations.history each took two pages
    cursors = [parse_qs(c.request.url.partition("?")[2]).get("cursor") for c in rsps.calls]
    assert sum(1 for c in cursors if c) >= 4
    assert all(c.request.headers["Authorization"] == "Bearer xoxp-test" for c in rsps.calls)

    channels = [e for e in entities if isinstance(e, SlackChannelEntity)]
    messages = [e for e in entities if isinstance(e, SlackMessageEntity)]
    assert [c.name for c in channels] == ["help", "discussions"]
    skipped = {"bot_add", "bot_remove"}  # integration notices are not indexed
    expected = {f"{conversations[n]['id']}:{m['ts']}" for n in conversations for m in slack.history(n)
                if m.get("subtype") not in skipped}
    expected |= {f"{conversations[n]['id']}:{m['ts']}" for n in conversations for t in slack.threads(n).values()
                 for m in t}
    assert {m.entity_id for m in messages} == expected and len(messages) == len(expected)

    thread_ts, thread = next((ts, t) for ts, t in slack.threads("help").items() if len(t) > 2)
    reply = next(m for m in messages if m.ts == thread[1]["ts"])
    help_id = conversations["help"]["id"]
    assert reply.entity_id == f"{help_id}:{thread[1]['ts']}" and reply.thread_ts == thread_ts
    assert [b.entity_type for b in reply.breadcrumbs] == ["SlackWorkspace", "SlackChannelEntity", "SlackMessageEntity"]
    assert reply.breadcrumbs[2].entity_id == f"{help_id}:{thread_ts}"
    assert reply.web_url == (f"https://olake-community.slack.com/archives/{help_id}/p{thread[1]['ts'].replace('.', '')}"
                             f"?thread_ts={thread_ts}&cid={help_id}")
    assert reply.created_at.timestamp() == pytest.approx(float(thread[1]["ts"]))
    assert reply.textual_representation().startswith("Reply in a thread by ")
    assert reply.raw_source_fields["is_reply"] is True and reply.access_is_public is True

    # <@U…> mentions are resolved to display names from users.list
    mentioned = next(m for m in slack.messages("help") if "<@U" in m["text"])
    entity = next(m for m in messages if m.ts == mentioned["ts"])
    assert "<@U" not in entity.text and "@" in entity.text
    # files are named in the text
    with_file = next(m for m in slack.messages("help") if m.get("files") and m.get("thread_ts") in (None, m["ts"]))
    assert with_file["files"][0]["name"] in next(m for m in messages if m.ts == with_file["ts"]).textual_representation()

    # a private channel: its messages carry the channel's group; the group's members are its members
    private = [m for m in messages if m.channel_id == conversations["discussions"]["id"]]
    assert private and all(m.access_viewers == [f"group:{conversations['discussions']['id']}"]
                           and not m.access_is_public for m in private)
    assert {m.member for m in memberships} == {f"user:{slack.email_of(u)}" for u in slack.members("discussions")
                                               if slack.email_of(u)}
    assert source.is_full_listing()
    newest = max(float(m.ts) for m in messages if m.channel_id == help_id)
    assert float(source.next_cursor()["channels"][help_id]["latest"]) == newest


def test_a_429_with_retry_after_is_retried(rsps):
    conv = slack.channel("general")
    rsps.add("GET", f"{slack.API}/conversations.history", status=429, headers={"Retry-After": "0"},
             json={"ok": False, "error": "ratelimited"})
    slack.add_workspace(rsps, {"general": conv})
    entities = list(make().generate_entities({}))
    assert len([e for e in entities if isinstance(e, SlackMessageEntity)]) == len(slack.history("general"))
    assert [c.response.status_code for c in rsps.calls if "conversations.history" in c.request.url] == [429, 200]


def test_an_expired_rotating_token_is_refreshed_and_the_new_refresh_token_saved(rsps, make_collection):
    connection = connect(make_collection(), access_token="xoxe.xoxp-1-old", refresh_token="xoxe-1-r1",
                         client_id="4724469134.4644010092847", client_secret="s3cret")
    # Slack says a token expired with HTTP 200 and ok: false, not with a 401
    rsps.add("GET", f"{slack.API}/auth.test", json={"ok": False, "error": "token_expired"},
             match=[responses.matchers.header_matcher({"Authorization": "Bearer xoxe.xoxp-1-old"})])
    rsps.add("POST", f"{slack.API}/oauth.v2.access", json={
        "ok": True, "app_id": "A0KRD7HC3", "access_token": "xoxe.xoxp-1-new", "token_type": "user",
        "scope": "search:read,channels:history", "expires_in": 43200, "refresh_token": "xoxe-1-r2",
        "team": {"id": slack.TEAM["id"], "name": slack.TEAM["name"]}})
    slack.add_workspace(rsps, {"general": slack.channel("general")}, auth_test=False)
    rsps.add("GET", f"{slack.API}/auth.test", json=slack.ok(url=slack.TEAM["url"], team=slack.TEAM["name"],
                                                           team_id=slack.TEAM["id"], user_id=slack.ME),
             match=[responses.matchers.header_matcher({"Authorization": "Bearer xoxe.xoxp-1-new"})])
    job = run(connection)
    assert job.status == "completed", job.error
    refresh = next(c.request for c in rsps.calls if "oauth.v2.access" in c.request.url)
    assert parse_qs(refresh.body)["grant_type"] == ["refresh_token"]
    assert parse_qs(refresh.body)["refresh_token"] == ["xoxe-1-r1"]
    connection.refresh_from_db()
    stored = decrypt_json(connection.encrypted_credentials)
    assert (stored["access_token"], stored["refresh_token"]) == ("xoxe.xoxp-1-new", "xoxe-1-r2")
    assert stored["expires_at"] > time.time() + 40000


def test_a_revoked_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection())
    rsps.add("GET", f"{slack.API}/auth.test", json={"ok": False, "error": "token_revoked"})
    job = run(connection)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == "needs_reauth" and "token_revoked" in connection.error_message


def test_the_user_token_of_the_browser_flow_is_preferred(rsps):
    rsps.add("GET", f"{slack.API}/auth.test", json=slack.ok(url=slack.TEAM["url"], team="OLake", team_id="T1",
                                                           user_id=slack.ME))
    credentials = {"access_token": "xoxb-bot", "token_type": "bot",
                   "authed_user": {"id": slack.ME, "access_token": "xoxp-user", "token_type": "user"}}
    make(credentials)._workspace()
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer xoxp-user"


def test_sync_into_search_then_an_incremental_run_finds_edits_and_deletions(rsps, make_collection, client):
    collection = make_collection()
    conv = slack.channel("contributing-to-olake")
    cid = conv["id"]
    slack.add_workspace(rsps, {"contributing-to-olake": conv}, history_pages=2)
    connection = connect(collection, {"channels": ["#contributing-to-olake"]})
    job = run(connection)
    total = 1 + len(slack.messages("contributing-to-olake"))
    assert (job.status, job.entities_inserted) == ("completed", total)

    first = slack.history("contributing-to-olake")[-1]  # the oldest message: a PR for issue #682
    query = first["text"].split("\n")[0]
    r = client.post("/collections/docs/search/instant", {"query": query, "limit": 3}, format="json")
    [top] = [x for x in r.json()["results"] if x["airweave_system_metadata"]["original_entity_id"] == f"{cid}:{first['ts']}"]
    assert top["web_url"] == permalink(slack.TEAM["url"], cid, first["ts"])
    assert [b["name"] for b in top["breadcrumbs"]] == ["OLake", "contributing-to-olake"]

    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data["channels"][cid]
    latest = max(slack.messages("contributing-to-olake"), key=lambda m: float(m["ts"]))["ts"]
    assert cursor["latest"] == latest

    # Next run: Slack is asked from `latest - 7 days`; the newest top-level message was edited,
    # the one before it deleted.
    rsps.reset()
    oldest = f"{float(latest) - 7 * 86400:.6f}"
    window = [m for m in slack.history("contributing-to-olake") if float(m["ts"]) >= float(oldest)]
    assert len(window) >= 2
    edited = {**window[0], "text": window[0]["text"] + " (edited: merged now)",
              "edited": {"user": window[0]["user"], "ts": f"{float(latest) + 60:.6f}"}}
    deleted = window[1]
    add = slack.add
    add(rsps, "auth.test", {}, slack.ok(url=slack.TEAM["url"], team="OLake", team_id=slack.TEAM["id"], user_id=slack.ME))
    slack.add_pages(rsps, "users.list", {"limit": 200}, "members", slack.users())
    slack.add_pages(rsps, "conversations.list", {"types": "public_channel,private_channel", "exclude_archived": "false",
                                                 "limit": 200}, "channels", [conv])
    slack.add_pages(rsps, "conversations.history", {"channel": cid, "limit": 200, "oldest": oldest}, "messages",
                    [edited, *window[2:]])
    for m in [edited, *window[2:]]:
        if m.get("reply_count"):
            slack.add_pages(rsps, "conversations.replies", {"channel": cid, "ts": m["ts"], "limit": 200}, "messages",
                            slack.threads("contributing-to-olake")[m["ts"]])
    job = run(connection)
    gone = {f"{cid}:{deleted['ts']}"} | {f"{cid}:{m['ts']}" for m in
                                         slack.threads("contributing-to-olake").get(deleted["ts"], [])}
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, len(gone)), job.error
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert not ids & gone and f"{cid}:{edited['ts']}" in ids
    assert len(ids) == total - len(gone)


def test_a_private_channel_is_searchable_by_its_members_only(rsps, make_collection):
    from airweave.collections.access import principals_for_user
    from airweave.tenancy.models import User

    collection = make_collection()
    conv = slack.channel("discussions", **PRIVATE)
    slack.add_workspace(rsps, {"discussions": conv}, members_of=["discussions"])
    connection = connect(collection)
    job = run(connection)
    assert job.status == "completed", job.error
    group = f"group:{connection.id}:{conv['id']}"
    entities = Entity.objects.filter(source_connection=connection)
    assert entities.count() == 1 + len(slack.messages("discussions"))
    assert all(e.access_viewers == [group] and not e.access_is_public for e in entities)
    member = slack.email_of(slack.members("discussions")[0])
    assert AccessGroupMembership.objects.filter(source_connection=connection, group_id=conv["id"],
                                                member=f"user:{member}").exists()
    user = User.objects.create_user(email=member, password="x")
    assert group in principals_for_user(user=user, organization=collection.organization)


ALICE, BOB, CAROL = slack.ME, "U081FEFF2R4", "U081FBXQJ3G"  # the token's user; a member of #general; of neither


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: #discussions is public; #general is private to its
    members (alice and bob among them), #contributing-to-olake to its members (alice, not bob); carol is in
    neither."""
    from tests.access.test_source_matrix import AclWorld

    conversations = {"discussions": slack.channel("discussions"), "general": slack.channel("general", **PRIVATE),
                     "contributing-to-olake": slack.channel("contributing-to-olake", **PRIVATE)}
    general, contributing = set(slack.members("general")), set(slack.members("contributing-to-olake"))
    assert {ALICE, BOB} <= general and ALICE in contributing and BOB not in contributing
    assert CAROL not in general | contributing
    emails = {ALICE: "alice@example.com", BOB: "bob@example.com", CAROL: "carol@example.com"}
    slack.add_workspace(rsps, conversations, members_of=["general", "contributing-to-olake"], emails=emails)
    ids = {}
    for entity in make().generate_entities({}):
        ids.setdefault(entity.channel_id if isinstance(entity, SlackMessageEntity) else entity.entity_id,
                       set()).add(entity.entity_id)
    public, private, alice_only = (ids[conversations[n]["id"]] for n in conversations)
    return AclWorld(short_name="slack", credentials={"access_token": "xoxp-test"}, config={},
                    visible={"alice": public | private | alice_only, "bob": public | private, "carol": public},
                    everything=public | private | alice_only)


# --- federated search -------------------------------------------------------------------------

GITHUB = SHARED_DATA / "github_api" / "extracted"


def _github_issue() -> dict:
    body = load_recorded(GITHUB / "Issue_comments.json")[0]["response"]["body"]
    return json.loads(body) if isinstance(body, str) else body


def _sse(response) -> list[dict]:
    from tests.api.test_search_pipeline import collect

    assert response.status_code == 200, response.content
    raw = "".join(p if isinstance(p, str) else p.decode() for p in collect(response.streaming_content))
    return [json.loads(f[len("data: "):]) for f in raw.split("\n\n") if f]


@pytest.fixture
def github_and_federated_slack(rsps, make_collection):
    """A collection with a synced GitHub repository and a Slack connection searched at query time."""
    collection = make_collection()
    issue = _github_issue()
    add_repository(rsps, "ossani24/github3.py")
    rsps.add("GET", "https://api.github.com/repos/ossani24/github3.py/issues?state=all&per_page=100", json=[issue])
    add_recorded(rsps, GITHUB / "Issue_comments.json", only=lambda i: i["request"]["uri"].endswith("comments?per_page=100"))
    github = source_connection_create(collection=collection, short_name="github",
                                      config={"repositories": ["ossani24/github3.py"]},
                                      authentication={"credentials": {"personal_access_token": "ghp_test"}},
                                      sync_immediately=False)
    assert run(github).status == "completed"

    conversations = {"general": slack.channel("general"), "discussions": slack.channel("discussions", **PRIVATE)}
    add_federated_workspace(rsps, conversations)  # no conversations.history: an unregistered call fails the job
    connection = connect(collection, {"federated_search": True})
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 0), job.error
    assert AccessGroupMembership.objects.filter(source_connection=connection, group_id=conversations["discussions"]["id"]
                                                ).exists()
    rsps.reset()
    return collection, connection, issue, conversations


def add_federated_workspace(rsps, conversations):
    slack.add(rsps, "auth.test", {}, slack.ok(url=slack.TEAM["url"], team="OLake", team_id=slack.TEAM["id"],
                                              user_id=slack.ME))
    slack.add_pages(rsps, "users.list", {"limit": 200}, "members", slack.users())
    slack.add_pages(rsps, "conversations.list", {"types": "public_channel,private_channel", "exclude_archived": "false",
                                                 "limit": 200}, "channels", list(conversations.values()))
    slack.add_pages(rsps, "conversations.members", {"channel": conversations["discussions"]["id"], "limit": 200},
                    "members", slack.members("discussions"))


SEARCH = {"retrieval_strategy": "hybrid", "limit": 10, "expand_query": False, "interpret_filters": False,
          "rerank": False, "generate_answer": False}


def test_federated_slack_results_merge_with_synced_github_results(github_and_federated_slack, rsps, client):
    collection, connection, issue, conversations = github_and_federated_slack
    query = issue["title"]
    general = slack.history("general")
    matches = [slack.search_match("general", general[0]),
               slack.search_match("discussions", slack.history("discussions")[0], **PRIVATE)]
    slack.add(rsps, "search.messages", {"query": query, "count": 10, "page": 1, "sort": "score",
                                        "highlight": "false"}, slack.search_body(query, matches))

    r = client.post(f"/collections/{collection.readable_id}/search", {"query": query, **SEARCH}, format="json")
    assert r.status_code == 200, r.content
    results = r.json()["results"]
    sources = [x["system_metadata"]["source_name"] for x in results]
    assert "github" in sources and "slack" in sources
    hit = next(x for x in results if x["entity_id"] == f"{conversations['general']['id']}:{general[0]['ts']}")
    assert hit["web_url"] == matches[0]["permalink"]
    assert hit["breadcrumbs"][1] == {"entity_id": conversations["general"]["id"], "name": "general",
                                     "entity_type": "SlackChannelEntity"}
    assert hit["access"] == {"is_public": True, "viewers": []}
    assert general[0]["text"][:40] in hit["textual_representation"]
    # the org-wide key sees the private channel's hit too, closed to its members' group
    private = next(x for x in results if x["entity_id"].startswith(conversations["discussions"]["id"]))
    assert private["access"] == {"is_public": False, "viewers": [f"group:{connection.id}:{conversations['discussions']['id']}"]}

    listed = client.get(f"/source-connections/{connection.id}").json()
    assert listed["federated_search"] is True


def test_a_failing_slack_search_gives_partial_results_and_an_event(transactional_db, github_and_federated_slack, rsps,
                                                                   client):
    """The stream runs its pipeline on another thread: the rows must be committed (transactional_db)."""
    collection, connection, issue, _ = github_and_federated_slack
    query = issue["title"]
    # a bot token cannot search: Slack answers HTTP 200 with ok: false
    for _ in range(2):
        slack.add(rsps, "search.messages", {"query": query, "count": 10, "page": 1, "sort": "score",
                                            "highlight": "false"}, {"ok": False, "error": "not_allowed_token_type"})
    r = client.post(f"/collections/{collection.readable_id}/search", {"query": query, **SEARCH}, format="json")
    assert r.status_code == 200, r.content
    results = r.json()["results"]
    assert results and {x["system_metadata"]["source_name"] for x in results} == {"github"}

    events = _sse(client.post(f"/collections/{collection.readable_id}/search/stream", {"query": query, **SEARCH},
                              format="json"))
    [done] = [e for e in events if e["type"] == "federated_search_done"]
    assert done["sources"] == ["slack"] and "not_allowed_token_type" in done["failures"]["slack"]
    assert done["count"] == 0
    connection.refresh_from_db()  # a token that cannot search needs a new grant (a user token with search:read)
    assert (connection.status, connection.error_category) == ("needs_reauth", "insufficient_scope")
    assert [e for e in events if e["type"] == "results"][0]["results"]


def test_federating_is_opt_in_per_connection(rsps, make_collection, client):
    assert SlackSource.federates({}) is False and SlackSource.federates({"federated_search": True}) is True
    r = client.get("/sources/slack").json()
    assert r["federated_search"] is True and r["supports_access_control"] is True
    assert {f["name"] for f in r["config_fields"]["fields"]} >= {"channels", "federated_search"}
    connection = connect(make_collection())
    assert client.get(f"/source-connections/{connection.id}").json()["federated_search"] is False
