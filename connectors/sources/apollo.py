"""Apollo: the contacts and accounts (companies) a team has saved in Apollo.io.

Config: `object_types` (`contacts`, `accounts`; default both), `full_sync_days` (7). Auth: a master
API key (Settings → Integrations → API), sent as `X-Api-Key`, as Apollo documents; a refused key
(401) marks the connection `needs_reauth`.

API (`https://api.apollo.io/api/v1`): `POST /contacts/search` (`{"page", "per_page": 100,
"sort_by_field": "contact_updated_at", "sort_ascending": false}`) and `POST /accounts/search`
(`{"page", "per_page": 100}`), paged by `page` until `pagination.total_pages`; both read only, so
they are retried like GETs. Apollo answers 429 past the plan's per-minute budget, which the
shared client waits out (Retry-After, else backoff).

Entities: ApolloContactEntity (`contact:{id}`: name, title, company, email, stage; breadcrumb: the
account; `web_url` `https://app.apollo.io/#/contacts/<id>`), ApolloAccountEntity (`account:{id}`:
name, domain, industry, phone; `web_url` `https://app.apollo.io/#/accounts/<id>`).

Incremental: cursor `{"since": {"contacts": <newest updated_at>}, "ids": {"accounts": [...]},
"full_at": ...}`. Contacts are walked newest first down to the mark; accounts are listed whole
every run (those gone are deleted). Contacts report no deletions, so every `full_sync_days` a run
lists every contact and the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import (
    FULL_SYNC_DAYS, ObjectTypesSource, PeriodicFullListing, Roster, compact, parse_time)

PAGE = 100
KINDS = ("contacts", "accounts")


@dataclass
class ApolloContactEntity(BaseEntity):
    """A contact: name, title, company and how to reach them."""

    details: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nApollo contact\n\n{self.details}".strip()


@dataclass
class ApolloAccountEntity(BaseEntity):
    """An account (company): name, domain, industry."""

    details: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nApollo account\n\n{self.details}".strip()


@source(
    name="Apollo",
    short_name="apollo",
    description="Contacts and accounts saved in Apollo.io.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "Settings → Integrations → API → master key.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("object_types", "What to index", "array", "contacts, accounts", items_type="string",
                               default=list(KINDS)), FULL_SYNC_DAYS),
    labels=("CRM", "Sales"),
    entity_types=(ApolloContactEntity, ApolloAccountEntity),
    rate_limit_level="org",
    rate_limit="100/minute",
    base_url="https://api.apollo.io/api/v1",
)
class ApolloSource(PeriodicFullListing, ObjectTypesSource, BaseSource):
    """Walks contacts newest first and lists every account; see the module docstring."""

    OBJECT_TYPES = KINDS

    def http_auth(self):
        return HeaderAuth({"X-Api-Key": self.credentials["api_key"]})

    def _search(self, kind: str, order: dict) -> Iterator[dict]:
        page = 1
        while True:
            body = self.http.post(f"/{kind}/search", json={"page": page, "per_page": PAGE, **order},
                                  idempotent=True).json()
            yield from body.get(kind) or []
            if page >= int((body.get("pagination") or {}).get("total_pages") or 0):
                return
            page += 1

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        self._accounts = Roster(cursor)
        if "accounts" in self.config["object_types"]:
            listed = []
            for a in self._search("accounts", {}):
                listed.append(f"account:{a['id']}")
                yield self._account(a)
            self._accounts.listed("accounts", listed)
            for gone in self._accounts.deleted():
                self._marks.delete(gone)
        else:
            self._accounts.forget("accounts")
        if "contacts" in self.config["object_types"]:
            since = self._marks.since("contacts")
            for c in self._search("contacts", {"sort_by_field": "contact_updated_at", "sort_ascending": False}):
                if since and (c.get("updated_at") or "") <= since:
                    break
                self._marks.advance("contacts", c.get("updated_at"))
                yield self._contact(c)

    def _account(self, a: dict) -> ApolloAccountEntity:
        meta = compact({"domain": a.get("domain") or a.get("primary_domain"), "industry": a.get("industry"),
                        "phone": (a.get("primary_phone") or {}).get("number") or a.get("phone"),
                        "website": a.get("website_url"), "linkedin": a.get("linkedin_url")})
        return ApolloAccountEntity(
            entity_id=f"account:{a['id']}", name=a.get("name") or a["id"],
            details="\n".join(f"{k}: {v}" for k, v in meta.items()),
            web_url=f"https://app.apollo.io/#/accounts/{a['id']}", created_at=parse_time(a.get("created_at")),
            updated_at=parse_time(a.get("updated_at")), raw_source_fields=meta)

    def _contact(self, c: dict) -> ApolloContactEntity:
        meta = compact({"title": c.get("title"), "company": c.get("organization_name"), "email": c.get("email"),
                        "stage": c.get("contact_stage_name"), "city": c.get("city"), "country": c.get("country"),
                        "linkedin": c.get("linkedin_url")})
        name = c.get("name") or " ".join(x for x in (c.get("first_name"), c.get("last_name")) if x) or c["id"]
        crumbs = [Breadcrumb(f"account:{c['account_id']}", c.get("organization_name") or "", "ApolloAccountEntity")] \
            if c.get("account_id") else []
        return ApolloContactEntity(
            entity_id=f"contact:{c['id']}", name=name, details="\n".join(f"{k}: {v}" for k, v in meta.items()),
            breadcrumbs=crumbs, web_url=f"https://app.apollo.io/#/contacts/{c['id']}",
            created_at=parse_time(c.get("created_at")), updated_at=parse_time(c.get("updated_at")),
            raw_source_fields=meta)

    def next_cursor(self) -> dict:
        return {**super().next_cursor(), **self._accounts.cursor()}
