"""The guru source against a fake Guru API that answers only its documented requests (basic auth of
the email and API token; `searchTerms`, `maxResults`, `showArchived`, `sortField`, `sortOrder`;
`Link` pagination): cards over two pages with their collection and board, a 429 with Retry-After
waited out, a refused token marking the connection `needs_reauth`, a sync found by search, then an
incremental run that builds only the card modified after the mark and removes a deleted one."""
from __future__ import annotations

import base64

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import guru
from connectors.sources.guru import GuruCardEntity, GuruSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.getguru.com/api/v1"
EMAIL, TOKEN = "ana@harbour.example", "guru-7f3e2d1c-0b9a-4c8d-9e7f-6a5b4c3d2e1f"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()}
QUERY = {"searchTerms": "", "maxResults": "2", "showArchived": "false", "sortField": "lastModified",
         "sortOrder": "desc"}
OPS = {"id": "col-1", "name": "Operations", "slug": "operations", "color": "#009688"}


def card(cid, title, html, modified, collection=OPS):
    return {"id": cid, "slug": f"{cid[:6]}/{title.replace(' ', '-')}", "preferredPhrase": title, "content": html,
            "collection": collection, "boards": [{"id": "b-1", "title": "Safety", "slug": "safety"}],
            "owner": {"email": EMAIL, "firstName": "Ana", "lastName": "Lima"}, "verificationState": "TRUSTED",
            "dateCreated": "2024-02-01T09:00:00.000+0000", "lastModified": modified, "cardType": "CARD"}


STORMS = card("c0a1b2c3", "Storm procedure", "<p>When winds exceed <b>50 knots</b> all sailings are suspended.</p>",
              "2024-05-03T09:00:00.000+0000")
ROTA = card("d1e2f3a4", "Crew rota", "<p>The crew rota is published every Friday.</p>",
            "2024-05-01T09:00:00.000+0000")
MENU = card("e5f6a7b8", "Café menu", "<p>Soup of the day and fresh bread.</p>", "2024-04-20T09:00:00.000+0000",
            collection={"id": "col-2", "name": "Galley"})


def cards(fake, pages=((STORMS, ROTA), (MENU,))):
    pages = list(pages)
    for n, page in enumerate(pages):
        link = {}
        if n + 1 < len(pages):
            link = {"Link": f'<{API}/search/query?searchTerms=&maxResults=2&page={n + 1}>; rel="next"'}
        query = QUERY if n == 0 else {"searchTerms": "", "maxResults": "2", "page": str(n)}
        fake.route("GET", "/search/query", query=query, headers=AUTH, reply=(200, link, list(page)))


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(guru, "PAGE", 2)


def test_cards_over_two_pages_with_their_collection_and_board(vendor):
    cards(vendor(API))
    source = GuruSource(GuruSource.validate_config({}), {"username": EMAIL, "api_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["card:c0a1b2c3", "card:d1e2f3a4", "card:e5f6a7b8"]
    storms = entities["card:c0a1b2c3"]
    assert isinstance(storms, GuruCardEntity) and "winds exceed" in storms.text and "<b>" not in storms.text
    assert [b.name for b in storms.breadcrumbs] == ["Operations", "Safety"]
    assert storms.web_url == "https://app.getguru.com/card/c0a1b2/Storm-procedure"
    assert storms.updated_at.isoformat() == "2024-05-03T09:00:00+00:00"
    assert source.is_full_listing() and source.next_cursor() == {"since": {"cards": STORMS["lastModified"]}}


def test_only_the_chosen_collections_are_indexed(vendor):
    cards(vendor(API))
    source = GuruSource(GuruSource.validate_config({"collections": ["Galley"]}), {"username": EMAIL,
                                                                                  "api_token": TOKEN})
    assert [e.entity_id for e in source.generate_entities({})] == ["card:e5f6a7b8"]


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/search/query", query=QUERY, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"description": "Too many requests"}), (200, {}, [STORMS])])
    source = GuruSource(GuruSource.validate_config({}), {"username": EMAIL, "api_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/search/query", query=QUERY, reply=(401, {}, {"description": "Unauthorized"}))
    connection = connect(make_collection(), "guru", {"username": EMAIL, "api_token": "revoked-token-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_builds_only_the_changed_card(vendor, make_collection, client):
    fake = vendor(API)
    cards(fake)
    connection = connect(make_collection(), "guru", {"username": EMAIL, "api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["card:c0a1b2c3"]

    fake.routes.clear()
    edited = {**ROTA, "content": "<p>The crew rota is now published every Thursday.</p>",
              "lastModified": "2024-05-04T09:00:00.000+0000"}
    cards(fake, pages=((edited, STORMS),))  # the café menu card was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"card:c0a1b2c3", "card:d1e2f3a4"}
    assert search_ids(client, "when is the crew rota published", limit=1) == ["card:d1e2f3a4"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"cards": "2024-05-04T09:00:00.000+0000"}
