"""The Intercom source against Intercom's documented response shapes (API 2.11, fixtures/intercom), served
by `responses`: search paged by `starting_after`, conversation parts, contacts, articles, a 429 waited
out on `X-RateLimit-Reset`, a refused token, an incremental run that removes a deleted article, the
periodic full listing that removes deleted conversations, and a sync found by search."""
from __future__ import annotations

import json
import time

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.intercom import (IntercomArticleEntity, IntercomContactEntity, IntercomConversationEntity,
                                         IntercomSource)
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://api.intercom.io"
CREDENTIALS = {"app_access_token": "dG9rOmY0ZjI2YmI2XzQ0YjNfNDQ4OV9hNjFhXzE0ZmRlZTdiMTRjZjoxOjA="}


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("intercom", name)


def pagination(after=None):
    def match(request):
        sent = json.loads(request.body)["pagination"]
        return sent.get("starting_after") == after, f"pagination {sent}"
    return [match]


def add_full_listing(rsps, articles=None):
    rsps.add("GET", f"{API}/me", json=f("me"))
    rsps.add("POST", f"{API}/conversations/search", match=pagination(None), json=f("conversations_page1"))
    rsps.add("POST", f"{API}/conversations/search", match=pagination("WzE3MTQ1NTcyMDAwMDAsMTkxMTE0OTgxMiwyXQ=="),
             json=f("conversations_page2"))
    for cid in ("1911149811", "1911149812", "1911149813"):
        rsps.add("GET", f"{API}/conversations/{cid}", match=[query(display_as="plaintext")],
                 json=f(f"conversation_{cid}"))
    rsps.add("POST", f"{API}/contacts/search", json=f("contacts"))
    rsps.add("GET", f"{API}/articles", match=[query(page=1, per_page=50)], json=articles or f("articles"))


def make(**config):
    return IntercomSource(IntercomSource.validate_config(config), dict(CREDENTIALS))


def test_a_full_listing_of_conversations_contacts_and_articles(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == ["article:9207421", "article:9207422", "contact:6643703ffae7834d1792fd30",
                                "conversation:1911149811", "conversation:1911149812", "conversation:1911149813"]
    first = rsps.calls[1].request
    assert first.headers["Authorization"] == f"Bearer {CREDENTIALS['app_access_token']}"
    assert first.headers["Intercom-Version"] == "2.11"
    assert json.loads(first.body)["query"] == {"field": "updated_at", "operator": ">", "value": 0}
    charged = entities["conversation:1911149811"]
    assert isinstance(charged, IntercomConversationEntity) and charged.name == "Charged twice for March"
    assert charged.web_url == "https://app.intercom.com/a/inbox/x9q2mz7r/inbox/conversation/1911149811"
    assert [(p.part_type, p.author) for p in charged.parts] == [("comment", "Marta Silva"), ("note", "Marta Silva")]
    text = charged.textual_representation()
    assert "## Priya Nair\n\nHi, we were charged twice" in text and "## Marta Silva (note)" in text
    assert charged.raw_source_fields["tags"] == ["billing"] and charged.raw_source_fields["channel"] == "conversation"
    untitled = entities["conversation:1911149812"]
    assert untitled.name == "How do I export my reports to CSV?" and len(untitled.parts) == 1  # the close part has no text
    contact = entities["contact:6643703ffae7834d1792fd30"]
    assert isinstance(contact, IntercomContactEntity) and contact.location == "Lisbon, Lisbon, Portugal"
    assert "plan: Growth" in contact.textual_representation()
    article = entities["article:9207421"]
    assert isinstance(article, IntercomArticleEntity)
    assert article.web_url == "https://help.brightdesk.example/en/articles/9207421-exporting-reports"
    assert source.is_full_listing()
    cursor = source.next_cursor()
    assert cursor["since"] == {"conversations": 1714560800, "contacts": 1714553600}
    assert cursor["ids"] == {"articles": ["article:9207421", "article:9207422"]}


def test_a_429_is_waited_out_until_the_rate_limit_reset(rsps):
    rsps.add("GET", f"{API}/me", json=f("me"))
    limited = rsps.add("POST", f"{API}/conversations/search", status=429, json=f("rate_limited"), headers={
        "X-RateLimit-Limit": "1666", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()))})
    rsps.add("POST", f"{API}/conversations/search", json=f("conversations_page2"))
    rsps.add("GET", f"{API}/conversations/1911149813", json=f("conversation_1911149813"))
    entities = list(make(include_contacts=False, include_articles=False).generate_entities({}))
    assert [e.entity_id for e in entities] == ["conversation:1911149813"] and limited.call_count == 1


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "intercom", CREDENTIALS)
    rsps.add("GET", f"{API}/me", status=401, json=f("unauthorized"))
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert (connection.status, connection.error_category) == ("needs_reauth", "invalid_credentials")


def test_sync_search_then_an_incremental_run_and_a_deleted_article(rsps, make_collection, client):
    connection = connect(make_collection(), "intercom", CREDENTIALS)
    add_full_listing(rsps)
    rsps.add("GET", f"{API}/admins", json=f("admins"))
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 6)
    assert search_ids(client, "refund the duplicate charge", limit=1) == ["conversation:1911149811"]

    rsps.reset()
    rsps.add("GET", f"{API}/admins", json=f("admins"))
    rsps.add("GET", f"{API}/me", json=f("me"))
    changed = f("conversation_1911149811")
    changed["updated_at"] = 1714600000
    changed["conversation_parts"]["conversation_parts"].append({
        **changed["conversation_parts"]["conversation_parts"][1], "id": "17520004", "created_at": 1714600000,
        "body": "<p>The refund has been processed by Stripe (re_3P1x2y).</p>"})
    search = rsps.add("POST", f"{API}/conversations/search", json={**f("conversations_page2"), "conversations": [changed]})
    rsps.add("GET", f"{API}/conversations/1911149811", json=changed)
    rsps.add("POST", f"{API}/contacts/search", json={**f("contacts"), "data": [], "total_count": 0})
    articles = f("articles")
    articles["data"] = articles["data"][:1]
    rsps.add("GET", f"{API}/articles", json=articles)
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    assert json.loads(search.calls[0].request.body)["query"]["value"] == 1714560799
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "article:9207422" not in ids and len(ids) == 5
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["conversations"] == 1714600000
    assert search_ids(client, "refund processed by Stripe", limit=1) == ["conversation:1911149811"]


def test_a_full_listing_comes_back_after_full_sync_days(rsps):
    rsps.add("GET", f"{API}/me", json=f("me"))
    search = rsps.add("POST", f"{API}/conversations/search", json={**f("conversations_page2"), "conversations": []})
    stale = {"since": {"conversations": 1714560800}, "full_at": int(time.time()) - 8 * 86400, "ids": {}}
    source = make(include_contacts=False, include_articles=False, full_sync_days=7)
    assert list(source.generate_entities(stale)) == []
    assert json.loads(search.calls[0].request.body)["query"]["value"] == 0
    assert source.is_full_listing() and source.next_cursor()["full_at"] >= time.time() - 5

    recent = {**stale, "full_at": int(time.time()) - 86400}
    source = make(include_contacts=False, include_articles=False, full_sync_days=7)
    list(source.generate_entities(recent))
    assert not source.is_full_listing() and source.next_cursor()["full_at"] == recent["full_at"]


# --- access control -------------------------------------------------------------------------------


def test_teammates_see_everything_customers_their_own_conversations_without_internal_notes(rsps):
    add_full_listing(rsps)
    rsps.add("GET", f"{API}/admins", json=f("admins"))
    source = make()
    assert {(m.group_id, m.member) for m in source.generate_access_memberships()} == {
        ("admins", "user:marta@brightdesk.example"), ("admins", "user:alice@example.com")}
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert entities["conversation:1911149811"].access_viewers == ["group:admins"]  # it holds an internal note
    for conversation in ("conversation:1911149812", "conversation:1911149813"):
        assert entities[conversation].access_viewers == ["group:admins", "user:priya@lumen.example"]
    assert entities["contact:6643703ffae7834d1792fd30"].access_viewers == ["group:admins"]
    assert all(entities[a].access_is_public for a in ("article:9207421", "article:9207422"))


def test_draft_articles_are_for_teammates(rsps):
    articles = f("articles")
    articles["data"][1]["state"] = "draft"
    rsps.add("GET", f"{API}/me", json=f("me"))
    rsps.add("POST", f"{API}/conversations/search", json={**f("conversations_page2"), "conversations": []})
    rsps.add("GET", f"{API}/articles", json=articles)
    entities = {e.entity_id: e for e in make(include_contacts=False).generate_entities({})}
    assert (entities["article:9207422"].access_viewers, entities["article:9207422"].access_is_public) == \
        (["group:admins"], False)


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: alice is a teammate; bob is the customer of
    conversation 1911149813; carol is nobody in Intercom."""
    from tests.access.test_source_matrix import AclWorld

    add_full_listing(rsps)
    rsps.add("GET", f"{API}/admins", json=f("admins"))
    bobs = f("conversation_1911149813")
    bobs["source"]["author"] = {**bobs["source"]["author"], "id": "7a1b2c3d4e5f60718293a4b5", "name": "Bob",
                                "email": "bob@example.com"}
    bobs["contacts"]["contacts"] = [{"type": "contact", "id": "7a1b2c3d4e5f60718293a4b5", "external_id": "u-81"}]
    rsps.replace("GET", f"{API}/conversations/1911149813", match=[query(display_as="plaintext")], json=bobs)
    everything = {"article:9207421", "article:9207422", "contact:6643703ffae7834d1792fd30",
                  "conversation:1911149811", "conversation:1911149812", "conversation:1911149813"}
    articles = {"article:9207421", "article:9207422"}
    return AclWorld(short_name="intercom", credentials=dict(CREDENTIALS), config={},
                    visible={"alice": everything, "bob": articles | {"conversation:1911149813"}, "carol": articles},
                    everything=everything)
