"""The Trello source against Trello's documented response shapes (fixtures/trello), served by `responses`:
comment actions paged backwards by `before`, cards with their comments, a 429 retried, a refused token,
OAuth 1 signatures, an incremental run from board actions with an archived card removed, and search."""
from __future__ import annotations

import pytest
import responses

import connectors.sources.trello as trello
from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.trello import TrelloBoardEntity, TrelloCardEntity, TrelloSource
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://api.trello.com/1"
B = "660d1c2b8f1e4a0012a3b4c5"
C1, C2, C3 = "660e2a1b8f1e4a0012a3c001", "660e2a1b8f1e4a0012a3c002", "660e2a1b8f1e4a0012a3c003"
CREDENTIALS = {"api_key": "e1a2b3c4d5e6f70812a3b4c5d6e7f809", "token": "ATTA9f8e7d6c5b4a39281706f5e4d3c2b1a0"}


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(trello, "PAGE", 2)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("trello", name)


def add_full_listing(rsps):
    rsps.add("GET", f"{API}/members/me/boards", match=[query(filter="open")], json=f("boards"))
    rsps.add("GET", f"{API}/boards/{B}/lists", json=f("lists"))
    rsps.add("GET", f"{API}/boards/{B}/actions", match=[query(filter="commentCard", limit=2, absent=("before", "since"))],
             json=f("comments_page1"))
    rsps.add("GET", f"{API}/boards/{B}/actions", match=[query(filter="commentCard", before="660f00000000000000000002")],
             json=f("comments_page2"))
    rsps.add("GET", f"{API}/boards/{B}/cards", match=[query(filter="open", fields=trello.CARD_FIELDS)], json=f("cards"))


def make(credentials=None, **config):
    return TrelloSource(TrelloSource.validate_config(config), credentials or dict(CREDENTIALS))


def test_a_full_listing_of_boards_cards_and_comments(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == [f"board:{B}", f"card:{C1}", f"card:{C2}", f"card:{C3}"]
    assert rsps.calls[0].request.headers["Authorization"] == (
        f'OAuth oauth_consumer_key="{CREDENTIALS["api_key"]}", oauth_token="{CREDENTIALS["token"]}"')
    assert isinstance(entities[f"board:{B}"], TrelloBoardEntity)
    card = entities[f"card:{C1}"]
    assert isinstance(card, TrelloCardEntity) and card.name == "Migrate blog posts"
    assert [b.name for b in card.breadcrumbs] == ["Website relaunch", "Doing"]
    assert [c.author for c in card.comments] == ["Bruno Dias", "Ana Lima"]  # oldest first
    assert "12 slugs collide" in card.textual_representation() and card.labels == ["content"]
    assert card.created_at.isoformat() == "2024-04-04T04:18:35+00:00"  # from the ObjectId
    assert card.web_url == "https://trello.com/c/12a3c001/migrate-blog-posts"
    assert [c.text for c in entities[f"card:{C2}"].comments] == ["Legal wants the reject button as prominent as accept."]
    assert source.is_full_listing()
    assert source.next_cursor() == {"since": {B: "2024-05-02T14:00:00.000Z"}}


def test_a_429_is_retried(rsps):
    limited = rsps.add("GET", f"{API}/members/me/boards", status=429, headers={"Retry-After": "0"},
                       json=f("rate_limited"))
    rsps.add("GET", f"{API}/members/me/boards", json=[])
    assert list(make().generate_entities({})) == [] and limited.call_count == 1


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "trello", CREDENTIALS)
    rsps.add("GET", f"{API}/members/me/boards", status=401, body="invalid token")
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert connection.status == "needs_reauth"


def test_oauth1_credentials_sign_each_request(rsps):
    rsps.add("GET", f"{API}/members/me/boards", json=[])
    list(make({"oauth_token": "ot-1", "oauth_token_secret": "ots-1", "consumer_key": "ck-1",
               "consumer_secret": "cs-1"}).generate_entities({}))
    header = rsps.calls[0].request.headers["Authorization"].decode()
    assert header.startswith("OAuth ") and 'oauth_consumer_key="ck-1"' in header and 'oauth_token="ot-1"' in header
    assert "oauth_signature=" in header


def test_sync_search_then_board_actions_update_a_card_and_an_archived_one_goes(rsps, make_collection, client):
    connection = connect(make_collection(), "trello", CREDENTIALS)
    add_full_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4)
    assert search_ids(client, "redirect map slugs collide", limit=1) == [f"card:{C1}"]

    rsps.reset()
    rsps.add("GET", f"{API}/members/me/boards", json=f("boards"))
    rsps.add("GET", f"{API}/boards/{B}/lists", json=f("lists"))
    rsps.add("GET", f"{API}/boards/{B}/actions", match=[query(since="2024-05-02T14:00:00.000Z", absent=("before",))],
             json=f("actions_since"))
    rsps.add("GET", f"{API}/boards/{B}/actions", match=[query(before="660f00000000000000000010")], json=[])
    rsps.add("GET", f"{API}/boards/{B}/cards", match=[query(fields="id")], json=f("card_ids"))  # C3 archived
    rsps.add("GET", f"{API}/cards/{C2}", match=[query(actions="commentCard")], json=f("card_c2"))
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {f"board:{B}", f"card:{C1}", f"card:{C2}"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"][B] == "2024-05-06T08:05:00.000Z"
    assert search_ids(client, "consent banner approved by legal", limit=1) == [f"card:{C2}"]
