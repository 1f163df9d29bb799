"""The Stripe source against Stripe's documented response shapes (fixtures/stripe), served by `responses`:
`starting_after` paging, the five object types, a 429 retried, a refused key, an events run that updates
a customer and deletes another, the 30-day event window, and a sync found by search."""
from __future__ import annotations

import pytest
import responses

import connectors.sources.stripe as stripe
from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.stripe import (StripeChargeEntity, StripeCustomerEntity, StripeInvoiceEntity, StripeSource,
                                       StripeSubscriptionEntity, money)
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://api.stripe.com/v1"
KEY = "sk_test_51Nv0FGQ9RKHgCVdKexampleexampleexample1234"
NOW = 1714600000  # 2024-05-01T21:46:40Z


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(stripe, "_now", lambda: NOW)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("stripe", name)


def add_full_listing(rsps):
    rsps.add("GET", f"{API}/customers", match=[query(limit=100, absent=("starting_after",))], json=f("customers_page1"))
    rsps.add("GET", f"{API}/customers", match=[query(starting_after="cus_Q1a2b3c4d5e6f8")], json=f("customers_page2"))
    for name in ("invoices", "charges", "products"):
        rsps.add("GET", f"{API}/{name}", json=f(name))
    rsps.add("GET", f"{API}/subscriptions", match=[query(status="all")], json=f("subscriptions"))


def make(**config):
    return StripeSource(StripeSource.validate_config(config), {"api_key": KEY})


def test_a_full_listing_of_the_five_object_types(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert len(entities) == 7
    assert rsps.calls[0].request.headers["Authorization"] == f"Bearer {KEY}"
    customer = entities["cus_Q1a2b3c4d5e6f7"]
    assert isinstance(customer, StripeCustomerEntity) and customer.name == "Douro Bikes Lda"
    assert customer.web_url == "https://dashboard.stripe.com/test/customers/cus_Q1a2b3c4d5e6f7"
    assert customer.raw_source_fields["metadata_crm_id"] == "acc-e6f7" and customer.raw_source_fields["country"] == "PT"
    invoice = entities["in_1PAbcdEFghijKLmn"]
    assert isinstance(invoice, StripeInvoiceEntity) and invoice.name == "Invoice 7F3A1C2B-0002 for Douro Bikes Lda"
    assert [b.as_dict() for b in invoice.breadcrumbs] == [{"entity_id": "cus_Q1a2b3c4d5e6f7", "name": "Douro Bikes Lda",
                                                           "entity_type": "StripeCustomerEntity"}]
    assert "Amount paid: 49.00 EUR" in invoice.textual_representation()
    assert "40 × Fleet tracking" in invoice.textual_representation()
    charge = entities["ch_3PAbcdEFghijKLmq1"]
    assert isinstance(charge, StripeChargeEntity)
    assert charge.web_url == "https://dashboard.stripe.com/test/payments/pi_3PAbcdEFghijKLmq1"
    subscription = entities["sub_1PAbcdEFghijKLmp"]
    assert isinstance(subscription, StripeSubscriptionEntity)
    assert "Fleet tracking monthly: 1.23 EUR per month × 40" in subscription.textual_representation()
    assert source.is_full_listing() and source.next_cursor() == {"since": {"events": NOW - 60}}


def test_money_knows_zero_decimal_currencies():
    assert (money(4900, "eur"), money(500, "jpy"), money(None, "eur")) == ("49.00 EUR", "500 JPY", "")


def test_a_429_is_retried(rsps):
    limited = rsps.add("GET", f"{API}/products", status=429, headers={"Retry-After": "0"}, json=f("rate_limited"))
    rsps.add("GET", f"{API}/products", json=f("products"))
    assert [e.entity_id for e in make(object_types=["product"]).generate_entities({})] == ["prod_Q1FleetTrack"]
    assert limited.call_count == 1


def test_a_refused_key_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "stripe", {"api_key": KEY})
    rsps.add("GET", f"{API}/customers", status=401, json=f("invalid_key"))
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert (connection.status, connection.error_category) == ("needs_reauth", "invalid_credentials")


def test_sync_search_then_events_update_and_delete(rsps, make_collection, client):
    connection = connect(make_collection(), "stripe", {"api_key": KEY})
    add_full_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 7)
    assert search_ids(client, "GPS tracking and theft alerts", limit=1) == ["prod_Q1FleetTrack"]

    rsps.reset()
    rsps.add("GET", f"{API}/events", match=[query(**{"created[gte]": NOW - 60})], json=f("events"))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "cus_Q1a2b3c4d5e6f9" not in ids and len(ids) == 6
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"events": 1714640000}}
    assert search_ids(client, "fleet of 55 e-bikes", limit=1) == ["cus_Q1a2b3c4d5e6f7"]  # the newest event won


def test_a_mark_older_than_the_event_window_lists_everything(rsps):
    rsps.add("GET", f"{API}/products", json=f("products"))
    source = make(object_types=["product"])
    list(source.generate_entities({"since": {"events": NOW - 31 * 86400}}))
    assert source.is_full_listing() and len(rsps.calls) == 1
