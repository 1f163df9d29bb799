"""The monday.com source against monday's documented GraphQL answers (fixtures/monday), served by
`responses`: boards paged by number, items by `items_page` / `next_items_page` cursors, updates, a
complexity 429 waited out, refused tokens (HTTP 401 and GraphQL errors), a deleted item removed by the
next full listing, and a sync found by search."""
from __future__ import annotations

import json

import pytest
import responses

import connectors.sources.monday as monday
from airweave.collections.models import Entity
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.monday import MondayBoardEntity, MondayItemEntity, MondaySource
from tests.connectors.saas_cases import connect, fixture, run_sync, search_ids

API = "https://api.monday.com/v2"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJ0aWQiOjM0MTIzNDU2Nywi.monday-token"
CURSOR = "MSw5NzI4MCxpXzlRWVZuQUxRMnNhb3FPUXJHcXJWbCw4NywzNXw0MTQ1NzU1NTM0"


@pytest.fixture(autouse=True)
def one_board_a_page(monkeypatch):
    monkeypatch.setattr(monday, "BOARD_PAGE", 1)  # so that two pages of boards are asked for


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("monday", name)


def variables(**expected):
    def match(request):
        sent = json.loads(request.body)["variables"]
        return all(sent.get(k) == v for k, v in expected.items()), f"variables {sent}"
    return [match]


def add_listing(rsps, items_page2=None):
    rsps.add("POST", API, match=variables(page=1), json=f("boards"))
    rsps.add("POST", API, match=variables(board=["1840263195"]), json=f("items_page1"))
    rsps.add("POST", API, match=variables(cursor=CURSOR), json=items_page2 or f("items_page2"))
    rsps.add("POST", API, match=variables(page=2), json=f("no_more_boards"))


def make():
    return MondaySource(MondaySource.validate_config({}), {"api_token": TOKEN})


def test_boards_and_items_over_pages_and_cursors(rsps):
    add_listing(rsps)
    entities = {e.entity_id: e for e in make().generate_entities({})}

    assert sorted(entities) == ["board:1840263195", "item:1840263301", "item:1840263302", "item:1840263303"]
    request = rsps.calls[0].request
    assert request.headers["Authorization"] == TOKEN and request.headers["API-Version"] == "2024-10"
    assert isinstance(entities["board:1840263195"], MondayBoardEntity)
    item = entities["item:1840263301"]
    assert isinstance(item, MondayItemEntity) and item.name == "Harbor Logistics"
    assert [b.name for b in item.breadcrumbs] == ["Customer Success", "Customer onboarding", "Kickoff"]
    assert item.columns == {"Status": "Working on it", "Owner": "Lena Vogel", "Go-live": "2024-05-30"}
    assert "SSO with Azure AD" in item.textual_representation()
    assert item.web_url == "https://tidewater.monday.com/boards/1840263195/pulses/1840263301"
    assert item.raw_source_fields["column_status"] == "Working on it"


def test_an_exhausted_complexity_budget_is_waited_out(rsps):
    limited = rsps.add("POST", API, status=429, headers={"Retry-After": "0"}, json=f("complexity"))
    rsps.add("POST", API, json=f("no_more_boards"))
    assert list(make().generate_entities({})) == [] and limited.call_count == 1


def test_refused_tokens_mark_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "monday", {"api_token": TOKEN})
    rsps.add("POST", API, status=401, json=f("not_authenticated"))
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert connection.status == "needs_reauth"

    rsps.add("POST", API, json=f("user_unauthorized"))
    with pytest.raises(AuthFailure, match="User unauthorized"):
        list(make().generate_entities({}))


def test_sync_search_then_a_deleted_item_is_removed(rsps, make_collection, client):
    connection = connect(make_collection(), "monday", {"api_token": TOKEN})
    add_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4)
    assert search_ids(client, "data export CSV mixed encodings", limit=1) == ["item:1840263302"]

    rsps.reset()
    add_listing(rsps, items_page2={"data": {"next_items_page": {"cursor": None, "items": []}}})
    job = run_sync(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 3, 1)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "item:1840263303" not in ids and len(ids) == 3
