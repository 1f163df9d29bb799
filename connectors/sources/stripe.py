"""Stripe: customers, invoices, charges, products and subscriptions of one account.

Config: `object_types` (default all five). Auth: a secret or restricted API key (direct,
`sk_...` / `rk_...`, read access is enough), as a bearer token.

API (`https://api.stripe.com/v1`): a first run lists `GET /v1/{customers,invoices,charges,products,
subscriptions}?limit=100` (subscriptions with `status=all`), paged by `starting_after=<last id>`
while `has_more` — a full listing, so absent objects are deleted. Later runs read the events
since the last run, `GET /v1/events?created[gte]=<mark>` (newest first, same paging): the newest
event of each object carries its current state in `data.object`, and `customer.deleted`,
`product.deleted`, `invoice.deleted` (a deleted draft) are deletions. (`customer.subscription.deleted`
is a cancellation: the subscription stays, with status `canceled`.) Stripe keeps events 30 days,
so an older mark makes the run a full listing again.

Budget: 25 read requests a second in test mode (100 live). Entities: StripeCustomerEntity,
StripeInvoiceEntity, StripeChargeEntity, StripeProductEntity, StripeSubscriptionEntity; the
`entity_id` is Stripe's own id (`cus_...`, `in_...`, `ch_...`, `prod_...`, `sub_...`);
breadcrumb: the customer; `web_url` the Dashboard page (under `/test` for test-mode objects).
Amounts are shown in major units. Cursor: `{"since": {"events": <epoch s>}}`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.notifications.vendors import StripeNotifications
from connectors.registry import source
from connectors.sources._saas import ObjectTypesSource, Watermarks, compact, items, parse_time

PAGE = 100
EVENT_DAYS = 29  # Stripe keeps events 30 days; one day of margin


def _now() -> float:
    return time.time()


# Currencies without minor units (https://docs.stripe.com/currencies#zero-decimal).
ZERO_DECIMAL = frozenset("bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf".split())


def money(amount: int | None, currency: str | None) -> str:
    """A Stripe amount (minor units) as text, e.g. money(4900, "eur") == "49.00 EUR"; "" for None."""
    if amount is None or not currency:
        return ""
    if currency.lower() in ZERO_DECIMAL:
        return f"{amount} {currency.upper()}"
    return f"{amount / 100:.2f} {currency.upper()}"


@dataclass
class StripeEntity(BaseEntity):
    """A Stripe object; `facts` are the labelled values shown in its text."""

    facts: dict = field(default_factory=dict)
    body: str = ""
    KIND = "Object"

    def textual_representation(self) -> str:
        lines = "\n".join(f"{k}: {v}" for k, v in self.facts.items() if v not in (None, "", []))
        return f"# {self.KIND}: {self.name}\n\n{lines}\n\n{self.body}".strip()


@dataclass
class StripeCustomerEntity(StripeEntity):
    KIND = "Customer"


@dataclass
class StripeInvoiceEntity(StripeEntity):
    KIND = "Invoice"


@dataclass
class StripeChargeEntity(StripeEntity):
    KIND = "Charge"


@dataclass
class StripeProductEntity(StripeEntity):
    KIND = "Product"


@dataclass
class StripeSubscriptionEntity(StripeEntity):
    KIND = "Subscription"


# object type (Stripe's `object` field) → (list path, extra list params, dashboard path)
OBJECT_TYPES = {
    "customer": ("/v1/customers", {}, "customers"),
    "invoice": ("/v1/invoices", {}, "invoices"),
    "charge": ("/v1/charges", {}, "payments"),
    "product": ("/v1/products", {}, "products"),
    "subscription": ("/v1/subscriptions", {"status": "all"}, "subscriptions"),
}
DELETION_EVENTS = frozenset({"customer.deleted", "product.deleted", "invoice.deleted"})


@source(
    name="Stripe",
    short_name="stripe",
    notifications=StripeNotifications,
    description="Customers, invoices, charges, products and subscriptions of a Stripe account.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "Secret or restricted key", "string",
                             "A secret key (sk_...) or a restricted key (rk_...) with read access to these objects.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("object_types", "Object types", "array",
                               f"Stripe objects to index, any of: {', '.join(OBJECT_TYPES)} (default: all).",
                               items_type="string", default=list(OBJECT_TYPES)),),
    labels=("Payments",),
    entity_types=(StripeCustomerEntity, StripeInvoiceEntity, StripeChargeEntity, StripeProductEntity,
                  StripeSubscriptionEntity),
    rate_limit_level="connection",
    rate_limit="25/second",
    base_url="https://api.stripe.com",
)
class StripeSource(ObjectTypesSource, BaseSource):
    """Lists Stripe objects, then follows the events; see the module docstring."""

    OBJECT_TYPES = OBJECT_TYPES
    TOKEN_FIELD = "api_key"

    def http_headers(self) -> dict:
        return {"Stripe-Version": "2024-06-20"}

    def _list(self, path: str, params: dict) -> Iterator[dict]:
        def fetch(after):
            query = {**params, "limit": PAGE}
            if after:
                query["starting_after"] = after
            body = self.http.get_json(path, params=query)
            data = body.get("data") or []
            return data, data[-1]["id"] if body.get("has_more") and data else None

        return items(fetch)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        now = int(_now())
        since = self._marks.since("events")
        if since is not None and since < now - EVENT_DAYS * 86400:
            self._marks.previous, self._marks.incremental, since = {}, False, None  # the events are gone
        wanted = self.config.get("object_types") or list(OBJECT_TYPES)
        if since is None:
            self._marks.set("events", now - 60)  # events from the listing's start on come next time
            for kind in wanted:
                path, params, _ = OBJECT_TYPES[kind]
                for obj in self._list(path, params):
                    yield self._entity(obj)
            return
        seen: set[str] = set()
        for event in self._list("/v1/events", {"created[gte]": since}):
            self._marks.advance("events", event.get("created"))
            obj = (event.get("data") or {}).get("object") or {}
            if obj.get("object") not in wanted or obj.get("id") in seen:
                continue  # newest first: an object's later events came before
            seen.add(obj["id"])
            if event.get("type") in DELETION_EVENTS or obj.get("deleted"):
                self._marks.delete(obj["id"])
            else:
                yield self._entity(obj)

    # --- entities ---------------------------------------------------------------------------

    def _entity(self, o: dict) -> StripeEntity:
        kind = o["object"]
        dashboard = f"https://dashboard.stripe.com/{'' if o.get('livemode') else 'test/'}{OBJECT_TYPES[kind][2]}/{o['id']}"
        customer = o.get("customer") if isinstance(o.get("customer"), str) else (o.get("customer") or {}).get("id")
        breadcrumbs = []
        if customer and kind != "customer":
            breadcrumbs.append(Breadcrumb(customer, o.get("customer_name") or o.get("customer_email") or customer,
                                          "StripeCustomerEntity"))
        common = dict(entity_id=o["id"], breadcrumbs=breadcrumbs, created_at=parse_time(o.get("created")),
                      web_url=dashboard, url=f"https://api.stripe.com{OBJECT_TYPES[kind][0]}/{o['id']}")
        meta = {"stripe_id": o["id"], "object": kind, "livemode": o.get("livemode"), "customer": customer}
        metadata = {f"metadata_{k}": v for k, v in (o.get("metadata") or {}).items()}
        if kind == "customer":
            address = o.get("address") or {}
            where = ", ".join(x for x in (address.get("city"), address.get("country")) if x)
            return StripeCustomerEntity(
                name=o.get("name") or o.get("email") or o["id"], body=o.get("description") or "",
                facts={"Email": o.get("email"), "Phone": o.get("phone"), "Location": where,
                       "Balance": money(o.get("balance"), o.get("currency")) if o.get("balance") else "",
                       "Delinquent": "yes" if o.get("delinquent") else ""},
                raw_source_fields=compact({**meta, "email": o.get("email"), "country": address.get("country"),
                                           "delinquent": o.get("delinquent"), **metadata}), **common)
        if kind == "invoice":
            lines = [line.get("description") or "" for line in (o.get("lines") or {}).get("data") or []]
            return StripeInvoiceEntity(
                name=f"Invoice {o.get('number') or o['id']}" + (f" for {o['customer_name']}" if o.get("customer_name") else ""),
                body="\n".join(f"- {line}" for line in lines if line) or (o.get("description") or ""),
                facts={"Status": o.get("status"), "Amount due": money(o.get("amount_due"), o.get("currency")),
                       "Amount paid": money(o.get("amount_paid"), o.get("currency")),
                       "Customer": o.get("customer_name") or o.get("customer_email"),
                       "Due": _day(o.get("due_date")),
                       "Invoice page": o.get("hosted_invoice_url")},
                raw_source_fields=compact({**meta, "number": o.get("number"), "status": o.get("status"),
                                           "amount_due": o.get("amount_due"), "currency": o.get("currency"),
                                           "subscription": o.get("subscription"), **metadata}), **common)
        if kind == "charge":
            return StripeChargeEntity(
                name=f"{money(o.get('amount'), o.get('currency'))} charge"
                     + (f": {o['description']}" if o.get("description") else ""),
                body=o.get("failure_message") or "",
                facts={"Status": o.get("status"), "Amount": money(o.get("amount"), o.get("currency")),
                       "Refunded": money(o.get("amount_refunded"), o.get("currency")) if o.get("amount_refunded") else "",
                       "Paid with": (o.get("payment_method_details") or {}).get("type"),
                       "Receipt": o.get("receipt_url"), "Failure": o.get("failure_code")},
                raw_source_fields=compact({**meta, "status": o.get("status"), "amount": o.get("amount"),
                                           "currency": o.get("currency"), "refunded": o.get("refunded"),
                                           "invoice": o.get("invoice"), "payment_intent": o.get("payment_intent"),
                                           **metadata}),
                **{**common, "web_url": dashboard.rsplit("/", 1)[0] + "/" + (o.get("payment_intent") or o["id"])})
        if kind == "product":
            return StripeProductEntity(
                name=o.get("name") or o["id"], body=o.get("description") or "",
                facts={"Active": "yes" if o.get("active") else "no", "Unit label": o.get("unit_label")},
                updated_at=parse_time(o.get("updated")),
                raw_source_fields=compact({**meta, "active": o.get("active"), **metadata}), **common)
        plan_lines = []
        for line in (o.get("items") or {}).get("data") or []:
            price = line.get("price") or {}
            recurring = price.get("recurring") or {}
            plan_lines.append(f"- {price.get('nickname') or price.get('product') or price.get('id')}: "
                              f"{money(price.get('unit_amount'), price.get('currency'))}"
                              f"{' per ' + recurring['interval'] if recurring.get('interval') else ''}"
                              f" × {line.get('quantity', 1)}")
        return StripeSubscriptionEntity(
            name=f"Subscription {o['id']}" + (f" of {customer}" if customer else ""), body="\n".join(plan_lines),
            facts={"Status": o.get("status"), "Current period ends": _day(o.get("current_period_end")),
                   "Cancels at period end": "yes" if o.get("cancel_at_period_end") else ""},
            raw_source_fields=compact({**meta, "status": o.get("status"),
                                       "cancel_at_period_end": o.get("cancel_at_period_end"), **metadata}), **common)


def _day(epoch) -> str:
    """An epoch-seconds date as YYYY-MM-DD (UTC); "" for None."""
    value = parse_time(epoch)
    return value.date().isoformat() if value else ""
