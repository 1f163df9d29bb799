"""Shopify: the products and orders of a Shopify store, through the Admin GraphQL API.

Config: `shop` (the `acme` of acme.myshopify.com; checked, so the host is always Shopify's),
`object_types` (`products`, `orders`; default both), `full_sync_days` (7). Auth: an Admin API
access token (a custom app's `shpat_...`, with `read_products` and `read_orders`; orders older
than 60 days need `read_all_orders`), sent as `X-Shopify-Access-Token`, as Shopify documents; a
refused token (401 "Invalid API key or access token") marks the connection `needs_reauth`.

API: `POST /admin/api/2025-01/graphql.json`, the `products` and `orders` connections
(`first: 50`, `after`, `sortKey: UPDATED_AT`, `query: "updated_at:>'<mark>'"` on incremental
runs), paged by `pageInfo { hasNextPage endCursor }`. Shopify limits queries by calculated cost
(a bucket per app and store, 100 points a second on the standard plan): a `THROTTLED` answer
waits until the bucket holds the query's `requestedQueryCost` (from `extensions.cost.
throttleStatus`) and asks again; HTTP 429 and 5xx are the shared client's.

Entities: ShopifyProductEntity (`product:{numeric id}`: title, description, vendor, type, tags,
variants; `web_url` the product in the store admin), ShopifyOrderEntity (`order:{numeric id}`:
name `#1001`, customer, financial and fulfillment status, line items, note). Breadcrumb: the shop.

Incremental: cursor `{"since": {"products": <newest updatedAt>, "orders": ...}, "full_at": ...}`.
The GraphQL API reports no deletions, so every `full_sync_days` a run lists everything and the
pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._graphql import GraphQLSource
from connectors.sources._saas import (
    FULL_SYNC_DAYS, ObjectTypesSource, PeriodicFullListing, SubdomainSource, compact, parse_time)

API_VERSION = "2025-01"
PAGE = 50
PRODUCTS = """query Products($first: Int!, $after: String, $query: String) {
  products(first: $first, after: $after, sortKey: UPDATED_AT, query: $query) {
    nodes { id title handle description vendor productType tags status createdAt updatedAt onlineStoreUrl
            variants(first: 20) { nodes { title sku price } } }
    pageInfo { hasNextPage endCursor }
  }
}"""
ORDERS = """query Orders($first: Int!, $after: String, $query: String) {
  orders(first: $first, after: $after, sortKey: UPDATED_AT, query: $query) {
    nodes { id name email note tags createdAt updatedAt cancelledAt displayFinancialStatus displayFulfillmentStatus
            totalPriceSet { shopMoney { amount currencyCode } } customer { displayName }
            lineItems(first: 50) { nodes { title quantity sku } } }
    pageInfo { hasNextPage endCursor }
  }
}"""
QUERIES = {"products": PRODUCTS, "orders": ORDERS}


@dataclass
class ShopifyProductEntity(BaseEntity):
    """A product: title (`name`), description, vendor, type, tags and variants."""

    description: str = ""
    details: str = ""
    variants: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.description,
                                       "\n".join(f"- {v}" for v in self.variants)) if p)


@dataclass
class ShopifyOrderEntity(BaseEntity):
    """An order: its name (`#1001`), customer, status, total, line items and note."""

    details: str = ""
    line_items: list[str] = field(default_factory=list)
    note: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# Order {self.name}", self.details, "\n".join(f"- {i}" for i in
                                                                                    self.line_items), self.note) if p)


@source(
    name="Shopify",
    short_name="shopify",
    description="Products and orders of a Shopify store (Admin GraphQL API).",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Admin API access token", "string", "A custom app's token (shpat_...) "
                             "with read_products and read_orders.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("shop", "Shop", "string", "The `acme` of https://acme.myshopify.com.", required=True),
        ConfigField("object_types", "What to index", "array", "products, orders", items_type="string",
                    default=list(QUERIES)),
        FULL_SYNC_DAYS,
    ),
    labels=("E-commerce",),
    entity_types=(ShopifyProductEntity, ShopifyOrderEntity),
    rate_limit_level="connection",
    rate_limit="2/second",
)
class ShopifySource(GraphQLSource, PeriodicFullListing, ObjectTypesSource, SubdomainSource):
    """Reads products and orders over GraphQL; see the module docstring."""

    OBJECT_TYPES = QUERIES
    SUBDOMAIN_FIELD, SUBDOMAIN_OF, SUBDOMAIN_OWNER = "shop", "myshopify.com", "the store's"
    GRAPHQL_URL = f"/admin/api/{API_VERSION}/graphql.json"
    VENDOR = "Shopify"

    def http_auth(self):
        return HeaderAuth({"X-Shopify-Access-Token": self.credentials["access_token"]})

    def throttle_wait(self, response, body: dict) -> float:
        """Until the bucket holds the query's requested cost, at the restore rate (points per second)."""
        cost = (body.get("extensions") or {}).get("cost") or {}
        status = cost.get("throttleStatus") or {}
        rate = float(status.get("restoreRate") or 50)
        missing = float(cost.get("requestedQueryCost") or rate) - float(status.get("currentlyAvailable") or 0)
        return max(0.0, missing / rate)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        shop = Breadcrumb(f"shop:{self.config['shop']}", f"{self.config['shop']}.myshopify.com", "ShopifyShop")
        for kind in self.config["object_types"]:
            since = self._marks.since(kind)
            variables = {"first": PAGE, "query": f"updated_at:>'{since}'" if since else None}
            for node in self.nodes(QUERIES[kind], kind, variables):
                self._marks.advance(kind, node.get("updatedAt"))
                yield self._product(node, shop) if kind == "products" else self._order(node, shop)

    def _admin_url(self, kind: str, gid: str) -> str:
        return f"https://admin.shopify.com/store/{self.config['shop']}/{kind}/{gid.rsplit('/', 1)[-1]}"

    def _product(self, p: dict, shop: Breadcrumb) -> ShopifyProductEntity:
        meta = compact({"vendor": p.get("vendor"), "type": p.get("productType"), "status": p.get("status"),
                        "tags": list(p.get("tags") or [])})
        variants = [" · ".join(str(x) for x in (v.get("title"), v.get("sku"), v.get("price")) if x)
                    for v in (p.get("variants") or {}).get("nodes") or []]
        return ShopifyProductEntity(
            entity_id=f"product:{p['id'].rsplit('/', 1)[-1]}", name=p.get("title") or p["id"],
            description=p.get("description") or "", variants=variants, breadcrumbs=[shop],
            details="; ".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in meta.items()),
            web_url=self._admin_url("products", p["id"]), url=p.get("onlineStoreUrl") or "",
            created_at=parse_time(p.get("createdAt")), updated_at=parse_time(p.get("updatedAt")),
            raw_source_fields={**meta, "handle": p.get("handle")})

    def _order(self, o: dict, shop: Breadcrumb) -> ShopifyOrderEntity:
        money = ((o.get("totalPriceSet") or {}).get("shopMoney")) or {}
        meta = compact({"customer": (o.get("customer") or {}).get("displayName"), "email": o.get("email"),
                        "financial_status": o.get("displayFinancialStatus"),
                        "fulfillment_status": o.get("displayFulfillmentStatus"),
                        "total": f"{money.get('amount')} {money.get('currencyCode')}" if money else None,
                        "cancelled_at": o.get("cancelledAt"), "tags": list(o.get("tags") or [])})
        items = [f"{i.get('quantity')} × {i.get('title')}" for i in (o.get("lineItems") or {}).get("nodes") or []]
        return ShopifyOrderEntity(
            entity_id=f"order:{o['id'].rsplit('/', 1)[-1]}", name=o.get("name") or o["id"], line_items=items,
            note=o.get("note") or "", breadcrumbs=[shop], web_url=self._admin_url("orders", o["id"]),
            details="; ".join(f"{k.replace('_', ' ')}: {', '.join(v) if isinstance(v, list) else v}"
                              for k, v in meta.items()),
            created_at=parse_time(o.get("createdAt")), updated_at=parse_time(o.get("updatedAt")),
            raw_source_fields=meta)
