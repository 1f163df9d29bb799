"""The Zendesk source against Zendesk's documented response shapes (fixtures/zendesk), served by
`responses`: the cursor-based incremental ticket export over two pages, comment threads with cursor
pagination, Help Center articles, a 429 waited out, a refused API token, `status: deleted` and
vanished articles removed on the next run, and a sync found by search."""
from __future__ import annotations

import base64

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.zendesk import ZendeskArticleEntity, ZendeskSource, ZendeskTicketEntity
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://acme.zendesk.com"
EXPORT = f"{API}/api/v2/incremental/tickets/cursor.json"
ARTICLES = f"{API}/api/v2/help_center/articles.json"
CREDENTIALS = {"email": "admin@acme.example", "api_token": "6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv"}


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("zendesk", name)


def comments_url(ticket_id):
    return f"{API}/api/v2/tickets/{ticket_id}/comments.json"


def add_first_run(rsps, articles=True):
    rsps.add("GET", EXPORT, match=[query(start_time=0, absent=("cursor",))], json=f("tickets_page1"))
    rsps.add("GET", EXPORT, match=[query(cursor="MTU3NjYxMzUzOS4wfHw0Njd8")], json=f("tickets_page2"))
    rsps.add("GET", comments_url(35436), match=[query(**{"page[size]": 100, "include": "users"})],
             json=f("comments_35436_page1"))
    rsps.add("GET", comments_url(35436), match=[query(**{"page[after]": "xxx"})], json=f("comments_35436_page2"))
    rsps.add("GET", comments_url(35437), json=f("comments_35437"))
    rsps.add("GET", comments_url(35438), json=f("comments_35438"))
    if articles:
        rsps.add("GET", ARTICLES, match=[query(per_page=100, include="sections")], json=f("articles"))


USERS = f"{API}/api/v2/users"


def add_agents(rsps):
    """The agents and admins, over two cursor pages (`GET /api/v2/users?role[]=agent&role[]=admin`)."""
    rsps.add("GET", USERS, match=[query(**{"page[size]": 100}, absent=("page[after]",))], json=f("agents_page1"))
    rsps.add("GET", USERS.replace("users", "users.json"),
             match=[query(**{"page[after]": "eyJvIjoiaWQiLCJ2IjoiYVNNQUFBQUFBQUFBIn0="})], json=f("agents_page2"))


def make(**config):
    return ZendeskSource(ZendeskSource.validate_config({"subdomain": "acme", **config}), dict(CREDENTIALS))


def test_a_first_run_exports_every_ticket_with_its_thread_and_the_articles(rsps):
    add_first_run(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == ["article:360026053753", "article:360026053754", "ticket:35436", "ticket:35437",
                                "ticket:35438"]
    expected = "Basic " + base64.b64encode(b"admin@acme.example/token:" + CREDENTIALS["api_token"].encode()).decode()
    assert rsps.calls[0].request.headers["Authorization"] == expected
    fire = entities["ticket:35436"]
    assert isinstance(fire, ZendeskTicketEntity) and fire.name == "Help, my printer is on fire!"
    assert fire.web_url == "https://acme.zendesk.com/agent/tickets/35436"
    assert [c.author for c in fire.comments] == ["Joana Reis", "Sam Agent", "Sam Agent"]
    text = fire.textual_representation()
    assert "## Sam Agent (internal note), 2024-05-01T09:00:00Z" in text and "recall for overheating" in text
    assert fire.raw_source_fields == {"ticket_id": 35436, "status": "open", "priority": "urgent", "type": "incident",
                                      "tags": ["printer", "fire"], "requester_id": 9021, "assignee_id": 9001,
                                      "group_id": 4401, "organization_id": 3301, "channel": "email"}
    article = entities["article:360026053753"]
    assert isinstance(article, ZendeskArticleEntity) and article.section == "Single sign-on"
    assert article.web_url.endswith("/articles/360026053753-Resetting-your-SSO-configuration")
    assert [b.name for b in article.breadcrumbs] == ["acme.zendesk.com", "Single sign-on"]
    assert "## Before you start" in article.body and "- Open Admin Center → Security." in article.body
    assert source.is_full_listing()
    assert source.next_cursor() == {"since": {"tickets": "MTU3NjYxMzU2MC4wfHw0Njh8"},
                                    "ids": {"articles": ["article:360026053753", "article:360026053754"]}}


def test_a_429_from_the_export_is_waited_out(rsps):
    limited = rsps.add("GET", EXPORT, status=429, headers={"Retry-After": "0"}, json=f("rate_limited"))
    rsps.add("GET", EXPORT, json={**f("tickets_page2"), "before_cursor": None})
    rsps.add("GET", comments_url(35438), json=f("comments_35438"))
    entities = list(make(include_articles=False).generate_entities({}))
    assert [e.entity_id for e in entities] == ["ticket:35438"] and limited.call_count == 1


def test_a_refused_api_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "zendesk", CREDENTIALS, config={"subdomain": "acme"})
    rsps.add("GET", EXPORT, status=401, json=f("unauthorized"))
    with pytest.raises(AuthFailure) as info:
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert info.value.category == "invalid_credentials"
    assert (connection.status, connection.error_category) == ("needs_reauth", "invalid_credentials")


def test_sync_search_then_deleted_tickets_and_articles_are_removed(rsps, make_collection, client):
    connection = connect(make_collection(), "zendesk", CREDENTIALS, config={"subdomain": "acme"})
    add_first_run(rsps)
    add_agents(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5)
    assert search_ids(client, "printer fuser recall overheating", limit=1) == ["ticket:35436"]

    rsps.reset()
    add_agents(rsps)
    rsps.add("GET", EXPORT, match=[query(cursor="MTU3NjYxMzU2MC4wfHw0Njh8", absent=("start_time",))],
             json=f("tickets_changes"))
    rsps.add("GET", comments_url(35437), json=f("comments_35437_solved"))
    only_sso = {**f("articles"), "articles": f("articles")["articles"][:1], "count": 1}
    rsps.add("GET", ARTICLES, json=only_sso)
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 2)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {"ticket:35436", "ticket:35437", "article:360026053753"}
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor == {"since": {"tickets": "MTU3NjYxNDAwMC4wfHw0NzB8"}, "ids": {"articles": ["article:360026053753"]}}
    assert search_ids(client, "re-issued invoice with the corrected VAT number", limit=1) == ["ticket:35437"]


@pytest.mark.parametrize("given, expected", [("acme", "acme"), ("https://Acme.zendesk.com/", "acme"),
                                             ("acme.zendesk.com", "acme")])
def test_the_subdomain_is_normalised(given, expected):
    assert ZendeskSource.validate_config({"subdomain": given})["subdomain"] == expected


@pytest.mark.parametrize("bad", ["evil.com/x", "169.254.169.254", "a_b", "acme.example.com#"])
def test_anything_but_a_subdomain_is_refused(bad):
    with pytest.raises(ValueError, match="subdomain"):
        ZendeskSource.validate_config({"subdomain": bad})


# --- access control -------------------------------------------------------------------------------


def test_agents_see_every_ticket_end_users_their_own_and_internal_notes_stay_with_agents(rsps):
    add_first_run(rsps)
    add_agents(rsps)
    source = make()
    agents = {(m.group_id, m.member) for m in source.generate_access_memberships()}
    assert agents == {("agents", "user:sam@acme.example"), ("agents", "user:alice@example.com")}  # not restricted
    assert "role%5B%5D=agent&role%5B%5D=admin" in rsps.calls[0].request.url  # or suspended
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert entities["ticket:35436"].access_viewers == ["group:agents"]  # its thread holds an internal note
    for ticket in ("ticket:35437", "ticket:35438"):  # requested by Joana (her address from the comments' users)
        assert entities[ticket].access_viewers == ["group:agents", "user:joana.reis@example.com"]
    assert all(entities[a].access_is_public for a in ("article:360026053753", "article:360026053754"))
    assert "include=users" in next(c.request.url for c in rsps.calls if c.request.url.startswith(EXPORT))


def test_articles_of_a_user_segment_and_drafts_are_for_agents():
    from connectors.sources.zendesk import _article_access

    assert _article_access({"user_segment_id": 360000091912, "draft": False})["access_viewers"] == ["group:agents"]
    assert _article_access({"user_segment_id": None, "draft": True})["access_is_public"] is False
    assert _article_access({"user_segment_id": None, "draft": False}) == {"access_viewers": [], "access_is_public": True}


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: alice is an admin; bob is copied on ticket 35438
    (his address sideloaded with the export); carol is nobody in Zendesk; the articles are for everyone."""
    from tests.access.test_source_matrix import AclWorld

    page2 = f("tickets_page2")
    page2["tickets"][0]["email_cc_ids"] = [9030]
    page2["users"] = [{"id": 9030, "name": "Bob Buyer", "email": "bob@example.com", "role": "end-user"}]
    rsps.add("GET", EXPORT, match=[query(start_time=0, absent=("cursor",))], json=f("tickets_page1"))
    rsps.add("GET", EXPORT, match=[query(cursor="MTU3NjYxMzUzOS4wfHw0Njd8")], json=page2)
    for ticket, name in ((35436, "comments_35436_page1"), (35437, "comments_35437"), (35438, "comments_35438")):
        rsps.add("GET", comments_url(ticket), match=[query(absent=("page[after]",))], json=f(name))
    rsps.add("GET", comments_url(35436), match=[query(**{"page[after]": "xxx"})], json=f("comments_35436_page2"))
    rsps.add("GET", ARTICLES, json=f("articles"))
    add_agents(rsps)
    everything = {"ticket:35436", "ticket:35437", "ticket:35438", "article:360026053753", "article:360026053754"}
    articles = {"article:360026053753", "article:360026053754"}
    return AclWorld(short_name="zendesk", credentials=dict(CREDENTIALS), config={"subdomain": "acme"},
                    visible={"alice": everything, "bob": articles | {"ticket:35438"}, "carol": articles},
                    everything=everything)
