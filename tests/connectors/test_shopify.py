"""The shopify source against a fake Admin GraphQL endpoint that checks what Shopify checks: the
`X-Shopify-Access-Token` header, and every query validated against the part of the Admin API
schema the source reads (fixtures/shopify/schema.graphql) and answered with only the fields it
selects. Products over two cursor pages and orders, a THROTTLED answer waited out by its cost and
an HTTP 429 by its Retry-After, a refused token marking the connection `needs_reauth`, a sync
found by search, then an incremental run that asks for `updated_at:>'<mark>'`."""
from __future__ import annotations

from pathlib import Path

import pytest
import responses
from graphql import build_schema

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import shopify
from connectors.sources.shopify import ShopifyOrderEntity, ShopifyProductEntity, ShopifySource
from tests.connectors.graphql_fake import GraphQLFake
from tests.connectors.saas_cases import connect, run_sync, search_ids

SCHEMA = build_schema((Path(__file__).parent / "fixtures" / "shopify" / "schema.graphql").read_text())
URL = "https://harbour-goods.myshopify.com/admin/api/2025-01/graphql.json"
TOKEN = "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"
AUTH = {"X-Shopify-Access-Token": TOKEN}
CONFIG = {"shop": "https://harbour-goods.myshopify.com/"}
COST = {"cost": {"requestedQueryCost": 252, "actualQueryCost": 12,
                 "throttleStatus": {"maximumAvailable": 2000.0, "currentlyAvailable": 1988, "restoreRate": 100.0}}}


def product(pid, title, description, updated, tags=()):
    return {"id": f"gid://shopify/Product/{pid}", "title": title, "handle": title.lower().replace(" ", "-"),
            "description": description, "descriptionHtml": f"<p>{description}</p>", "vendor": "Harbour Goods",
            "productType": "Outdoor", "tags": list(tags), "status": "ACTIVE", "createdAt": "2024-02-01T09:00:00Z",
            "updatedAt": updated, "onlineStoreUrl": f"https://harbour-goods.example/products/{pid}",
            "variants": {"nodes": [{"id": f"gid://shopify/ProductVariant/{pid}1", "title": "Default Title",
                                    "sku": f"HG-{pid}", "price": "49.00"}],
                         "pageInfo": {"hasNextPage": False, "hasPreviousPage": False}}}


JACKET = product(7982301, "Storm jacket", "A waterproof jacket that keeps you dry in 50 knot gales on deck.",
                 "2024-05-03T09:00:00Z", tags=["rain", "deck"])
MUG = product(7982302, "Enamel mug", "A chip-resistant enamel mug for the galley.", "2024-04-20T09:00:00Z")
BAG = product(7982303, "Dry bag", "A roll-top dry bag of 20 litres.", "2024-04-25T09:00:00Z")
ORDER = {"id": "gid://shopify/Order/5501002", "name": "#1001", "email": "ana@harbour.example",
         "note": "Leave at the harbour office.", "tags": [], "createdAt": "2024-05-02T07:00:00Z",
         "updatedAt": "2024-05-02T11:00:00Z", "cancelledAt": None, "displayFinancialStatus": "PAID",
         "displayFulfillmentStatus": "FULFILLED",
         "totalPriceSet": {"shopMoney": {"amount": "98.0", "currencyCode": "EUR"},
                           "presentmentMoney": {"amount": "98.0", "currencyCode": "EUR"}},
         "customer": {"id": "gid://shopify/Customer/1", "displayName": "Ana Lima"},
         "lineItems": {"nodes": [{"id": "gid://shopify/LineItem/1", "title": "Storm jacket", "quantity": 2,
                                  "sku": "HG-7982301"}], "pageInfo": {"hasNextPage": False, "hasPreviousPage": False}}}


def connection(key, nodes, end=None):
    return {"data": {key: {"nodes": list(nodes), "pageInfo": {"hasNextPage": end is not None, "endCursor": end,
                                                              "hasPreviousPage": False}}}, "extensions": COST}


def store(products=((JACKET, MUG), (BAG,)), orders=(ORDER,)):
    pages = list(products)
    answers = {("Products", "eyJsYXN0X2lkIjo" + str(n) if n else None):
               connection("products", page, "eyJsYXN0X2lkIjo" + str(n + 1) if n + 1 < len(pages) else None)
               for n, page in enumerate(pages)}
    answers[("Orders", None)] = connection("orders", orders)
    return answers


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(shopify, "PAGE", 2)


def make():
    return ShopifySource(ShopifySource.validate_config(CONFIG), {"access_token": TOKEN})


def test_products_over_two_pages_and_orders(rsps):
    api = GraphQLFake(rsps, URL, SCHEMA, store(), headers=AUTH)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["order:5501002", "product:7982301", "product:7982302", "product:7982303"]
    jacket = entities["product:7982301"]
    assert isinstance(jacket, ShopifyProductEntity) and "50 knot gales" in jacket.description
    assert jacket.web_url == "https://admin.shopify.com/store/harbour-goods/products/7982301"
    assert jacket.variants == ["Default Title · HG-7982301 · 49.00"] and "tags: rain, deck" in jacket.details
    assert [b.name for b in jacket.breadcrumbs] == ["harbour-goods.myshopify.com"]
    order = entities["order:5501002"]
    assert isinstance(order, ShopifyOrderEntity) and order.line_items == ["2 × Storm jacket"]
    assert order.raw_source_fields["total"] == "98.0 EUR" and order.raw_source_fields["customer"] == "Ana Lima"
    assert [v["query"] for _, v in api.seen] == [None, None, None]
    assert source.is_full_listing() and source.next_cursor()["since"] == {"products": "2024-05-03T09:00:00Z",
                                                                          "orders": "2024-05-02T11:00:00Z"}


def test_the_shop_must_be_a_myshopify_subdomain():
    with pytest.raises(ValueError, match="the store's subdomain only"):
        ShopifySource.validate_config({"shop": "https://evil.example/"})


def test_throttled_by_cost_and_an_http_429_are_waited_out(rsps):
    answers = store(products=((JACKET,),))
    answers[("Products", None)] = [
        (429, {"Retry-After": "2"}, {"errors": "Exceeded 2 calls per second for api client. Reduce request rates "
                                               "to resume uninterrupted service."}),
        (200, {}, {"errors": [{"message": "Throttled", "extensions": {
            "code": "THROTTLED", "documentation": "https://shopify.dev/api/usage/rate-limits"}}],
            "extensions": {"cost": {"requestedQueryCost": 252, "actualQueryCost": None, "throttleStatus": {
                "maximumAvailable": 2000.0, "currentlyAvailable": 52, "restoreRate": 100.0}}}}),
        (200, {}, connection("products", [JACKET]))]
    GraphQLFake(rsps, URL, SCHEMA, answers, headers=AUTH)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 2
    assert waits[0] >= 2 and waits[1] == pytest.approx(2.0)  # Retry-After, then (252 - 52) / 100 s


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    GraphQLFake(rsps, URL, SCHEMA, {("Products", None): [(401, {}, {
        "errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"})]})
    connection_ = connect(make_collection(), "shopify", {"access_token": "shpat_revoked_0123456789"}, CONFIG)
    job = run_sync(connection_)
    connection_.refresh_from_db()
    assert job.status == "failed" and connection_.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_asks_for_what_changed(rsps, make_collection, client):
    api = GraphQLFake(rsps, URL, SCHEMA, store(), headers=AUTH)
    connection_ = connect(make_collection(), "shopify", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection_)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "something to keep me dry in a gale", limit=1) == ["product:7982301"]

    edited = {**MUG, "description": "A chip-resistant enamel mug that keeps tea hot for an hour.",
              "updatedAt": "2024-05-04T09:00:00Z"}
    api.answers = store(products=((edited,),), orders=())
    api.seen.clear()
    job = run_sync(connection_)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 0), job.error
    assert [v["query"] for _, v in api.seen] == ["updated_at:>'2024-05-03T09:00:00Z'",
                                                 "updated_at:>'2024-05-02T11:00:00Z'"]
    assert Entity.objects.filter(source_connection=connection_).count() == 4
    assert search_ids(client, "which mug keeps tea hot", limit=1) == ["product:7982302"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["products"] == "2024-05-04T09:00:00Z"
