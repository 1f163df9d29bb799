"""Pipedrive: the deals, people, organizations and notes of a Pipedrive company.

Config: `company_domain` (the `acme` of acme.pipedrive.com; checked, so the host is always a
Pipedrive one). Auth: a personal API token (Personal preferences → API), sent as the
`x-api-token` header, or OAuth 2 (browser flow, bring-your-own client, or an injected token;
`with_refresh`, the app's client authenticated by basic auth: the `pipedrive` entry of
oauth_providers.yml). A refused token (401) is refreshed once (OAuth) or marks the connection
`needs_reauth`.

API (v1): a first run lists `GET /api/v1/{deals,persons,organizations,notes}?start=N&limit=500`,
paged by `additional_data.pagination.next_start` while `more_items_in_collection`; later runs
ask `GET /api/v1/recents?since_timestamp=<mark>&items=deal,person,organization,note&start=N
&limit=500`, which answers every change since the mark as `{"item", "id", "data"}`. Pipedrive
budgets requests per token over 2-second windows and answers 429 with Retry-After, which the
shared client waits out.

Entities: PipedriveDealEntity (`deal:{id}`; breadcrumb: its organization), PipedrivePersonEntity
(`person:{id}`), PipedriveOrganizationEntity (`organization:{id}`), PipedriveNoteEntity
(`note:{id}`, HTML as text; breadcrumb: the deal, person or organization it is on); `web_url`
the item's page in Pipedrive.

Incremental: cursor `{"since": {"recents": <newest update_time, "YYYY-MM-DD HH:MM:SS" UTC>}}`.
Items of the recents feed that are deleted (a deal's `deleted` or `status: deleted`; a person's,
organization's or note's `active_flag: false`) are reported deleted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import SubdomainSource, Watermarks, WatermarkSource, html_text, parse_time

LIMIT = 500
KINDS = {"deal": "deals", "person": "persons", "organization": "organizations", "note": "notes"}


@dataclass
class PipedriveDealEntity(BaseEntity):
    """A deal: title, value, stage status and people."""

    summary: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.summary}".strip()


@dataclass
class PipedrivePersonEntity(PipedriveDealEntity):
    """A person (contact)."""


@dataclass
class PipedriveOrganizationEntity(PipedriveDealEntity):
    """An organization."""


@dataclass
class PipedriveNoteEntity(PipedriveDealEntity):
    """A note on a deal, person or organization."""


def _deleted(kind: str, data: dict) -> bool:
    if kind == "deal":
        return bool(data.get("deleted")) or data.get("status") == "deleted"
    return data.get("active_flag") is False


def _ref(value) -> dict:
    """Pipedrive answers a linked item as an id or as an object with `value` and `name`."""
    return value if isinstance(value, dict) else {"value": value} if value else {}


@source(
    name="Pipedrive",
    short_name="pipedrive",
    description="Deals, people, organizations and notes of a Pipedrive company.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(ConfigField("api_token", "API token", "string", "Personal preferences → API.", required=True,
                             is_secret=True),),
    config_fields=(ConfigField("company_domain", "Company domain", "string", "The `acme` of https://acme.pipedrive.com.",
                               required=True),),
    labels=("CRM",),
    entity_types=(PipedriveDealEntity, PipedrivePersonEntity, PipedriveOrganizationEntity, PipedriveNoteEntity),
    rate_limit_level="connection",
    rate_limit="40/second",
)
class PipedriveSource(WatermarkSource, SubdomainSource):
    """Lists every object on a first run, follows the recents feed afterwards; see the module docstring."""

    SUBDOMAIN_FIELD, SUBDOMAIN_OF, SUBDOMAIN_OWNER = "company_domain", "pipedrive.com", "the company's"

    def http_auth(self):
        token = self.credentials.get("api_token")
        return HeaderAuth({"x-api-token": token}) if token else super().http_auth()

    def _pages(self, path: str, params: dict | None = None) -> Iterator[dict]:
        start = 0
        while True:
            body = self.http.get_json(path, params={**(params or {}), "start": start, "limit": LIMIT})
            yield from body.get("data") or []
            pagination = (body.get("additional_data") or {}).get("pagination") or {}
            if not pagination.get("more_items_in_collection"):
                return
            start = pagination.get("next_start", start + LIMIT)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        since = self._marks.since("recents")
        if not since:
            for kind, plural in KINDS.items():
                for data in self._pages(f"/api/v1/{plural}"):
                    entity = self._entity(kind, data)
                    if entity is not None:
                        yield entity
            return
        for change in self._pages("/api/v1/recents", {"since_timestamp": since,
                                                      "items": ",".join(KINDS)}):
            kind, data = change.get("item"), change.get("data") or {}
            if kind not in KINDS or not data:
                continue
            entity = self._entity(kind, data)
            if entity is not None:
                yield entity

    def _entity(self, kind: str, data: dict) -> BaseEntity | None:
        self._marks.advance("recents", data.get("update_time"))
        entity_id = f"{kind}:{data['id']}"
        if _deleted(kind, data):
            self._marks.delete(entity_id)
            return None
        common = dict(entity_id=entity_id, created_at=parse_time(data.get("add_time")),
                      updated_at=parse_time(data.get("update_time")))
        org = _ref(data.get("org_id"))
        person = _ref(data.get("person_id"))
        if kind == "deal":
            lines = [f"value: {data.get('value')} {data.get('currency', '')}".strip(), f"status: {data.get('status')}",
                     f"organization: {data.get('org_name') or org.get('name', '')}",
                     f"contact: {data.get('person_name') or person.get('name', '')}",
                     f"owner: {data.get('owner_name', '')}"]
            crumbs = [Breadcrumb(f"organization:{org['value']}", org.get("name") or data.get("org_name") or "",
                                 "PipedriveOrganizationEntity")] if org.get("value") else []
            return PipedriveDealEntity(name=data.get("title") or entity_id, summary="\n".join(lines),
                                       breadcrumbs=crumbs, web_url=f"{self.base_url}/deal/{data['id']}",
                                       raw_source_fields={"status": data.get("status"), "value": data.get("value"),
                                                          "currency": data.get("currency"),
                                                          "stage_id": data.get("stage_id")}, **common)
        if kind == "person":
            emails = [e.get("value") for e in data.get("email") or [] if isinstance(e, dict) and e.get("value")]
            phones = [p.get("value") for p in data.get("phone") or [] if isinstance(p, dict) and p.get("value")]
            lines = [f"organization: {data.get('org_name') or org.get('name', '')}", f"email: {', '.join(emails)}",
                     f"phone: {', '.join(phones)}"]
            return PipedrivePersonEntity(name=data.get("name") or entity_id, summary="\n".join(lines),
                                         web_url=f"{self.base_url}/person/{data['id']}",
                                         raw_source_fields={"emails": emails}, **common)
        if kind == "organization":
            return PipedriveOrganizationEntity(name=data.get("name") or entity_id,
                                               summary=f"address: {data.get('address') or ''}",
                                               web_url=f"{self.base_url}/organization/{data['id']}", **common)
        target = next(((k, data.get(f"{k}_id")) for k in ("deal", "person", "org") if data.get(f"{k}_id")), None)
        crumbs, url = [], self.base_url
        if target:
            kind_name = "organization" if target[0] == "org" else target[0]
            crumbs = [Breadcrumb(f"{kind_name}:{target[1]}", kind_name, f"Pipedrive{kind_name.capitalize()}Entity")]
            url = f"{self.base_url}/{kind_name}/{target[1]}"
        text = html_text(data.get("content"))
        return PipedriveNoteEntity(name=text[:80] or entity_id, summary=text, breadcrumbs=crumbs, web_url=url,
                                   **common)
