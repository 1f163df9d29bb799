"""HubSpot CRM: contacts, companies, deals, tickets and notes.

Config: `object_types` (default all five). Auth: a private app access token (direct,
`private_app_token`) or OAuth (HubSpot access tokens live 30 minutes and come with a refresh
token that does not rotate: `with_refresh`).

API (CRM v3): a first run lists `GET /crm/v3/objects/{type}?limit=100&properties=...`, paged by
`paging.next.after` — a full listing, so absent objects are deleted. Later runs search
`POST /crm/v3/objects/{type}/search` for objects whose last-modified property (`lastmodifieddate`
for contacts, `hs_lastmodifieddate` for the rest) is at or after the saved mark, sorted by it
ascending; the search API stops at 10,000 results per query, so a longer run restarts the query
from the newest mark seen. Deletions: `GET /crm/v3/objects/{type}?archived=true`, every object
archived since the mark is reported deleted. `GET /account-info/v3/details` gives the portal id
and UI domain of the record links (`https://app.hubspot.com/contacts/{portal}/record/0-1/{id}`).

Budget: 100 requests per 10 seconds per app and account, so the limit is per connection (the
search endpoint's own 5/second is retried on its 429).

Entities: HubSpotContactEntity (`contact:{id}`), HubSpotCompanyEntity (`company:{id}`),
HubSpotDealEntity (`deal:{id}`), HubSpotTicketEntity (`ticket:{id}`), HubSpotNoteEntity
(`note:{id}`; notes have no page of their own, so no `web_url`). Breadcrumbs: the portal, then
the contact's company. Cursor: `{"since": {type: "<newest updatedAt seen, ISO>"}}`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import ObjectTypesSource, Watermarks, compact, html_text, items, parse_time

SEARCH_WINDOW = 10_000  # the search API answers at most this many results per query
PAGE = 100


@dataclass
class HubSpotEntity(BaseEntity):
    """A CRM object; `properties` holds the HubSpot properties the source asked for."""

    object_type: str = ""
    properties: dict | None = None
    owner_id: str = ""

    def _lines(self, *pairs: tuple[str, object]) -> str:
        return "\n".join(f"{label}: {value}" for label, value in pairs if value not in (None, ""))


@dataclass
class HubSpotContactEntity(HubSpotEntity):
    """A contact: a person."""

    email: str = ""
    company_name: str = ""

    def textual_representation(self) -> str:
        p = self.properties or {}
        return f"# Contact: {self.name}\n\n" + self._lines(
            ("Email", self.email), ("Phone", p.get("phone")), ("Job title", p.get("jobtitle")),
            ("Company", self.company_name), ("Lifecycle stage", p.get("lifecyclestage")),
            ("Lead status", p.get("hs_lead_status")))


@dataclass
class HubSpotCompanyEntity(HubSpotEntity):
    """A company."""

    domain: str = ""

    def textual_representation(self) -> str:
        p = self.properties or {}
        location = ", ".join(x for x in (p.get("city"), p.get("country")) if x)
        return f"# Company: {self.name}\n\n" + self._lines(
            ("Domain", self.domain), ("Industry", p.get("industry")), ("Location", location),
            ("Employees", p.get("numberofemployees")), ("Lifecycle stage", p.get("lifecyclestage")),
            ("Description", p.get("description")))


@dataclass
class HubSpotDealEntity(HubSpotEntity):
    """A deal in a pipeline."""

    amount: float | None = None
    stage: str = ""
    pipeline: str = ""

    def textual_representation(self) -> str:
        p = self.properties or {}
        return f"# Deal: {self.name}\n\n" + self._lines(
            ("Amount", p.get("amount")), ("Stage", self.stage), ("Pipeline", self.pipeline),
            ("Close date", p.get("closedate")), ("Description", p.get("description")))


@dataclass
class HubSpotTicketEntity(HubSpotEntity):
    """A support ticket."""

    content: str = ""
    priority: str = ""

    def textual_representation(self) -> str:
        p = self.properties or {}
        return (f"# Ticket: {self.name}\n\n" + self._lines(
            ("Priority", self.priority), ("Stage", p.get("hs_pipeline_stage")), ("Category", p.get("hs_ticket_category")))
                + f"\n\n{self.content}").strip()


@dataclass
class HubSpotNoteEntity(HubSpotEntity):
    """A note (an engagement) logged on a record; its body is HTML in HubSpot, text here."""

    body: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.body}".strip()


# type → (entity class, properties to read, last-modified property)
OBJECT_TYPES: dict[str, tuple[type[HubSpotEntity], tuple[str, ...], str]] = {
    "contacts": (HubSpotContactEntity, ("firstname", "lastname", "email", "phone", "jobtitle", "company",
                                        "lifecyclestage", "hs_lead_status", "associatedcompanyid",
                                        "hubspot_owner_id", "createdate", "lastmodifieddate"), "lastmodifieddate"),
    "companies": (HubSpotCompanyEntity, ("name", "domain", "industry", "city", "country", "numberofemployees",
                                         "lifecyclestage", "description", "hubspot_owner_id", "createdate",
                                         "hs_lastmodifieddate"), "hs_lastmodifieddate"),
    "deals": (HubSpotDealEntity, ("dealname", "amount", "dealstage", "pipeline", "closedate", "description",
                                  "hubspot_owner_id", "createdate", "hs_lastmodifieddate"), "hs_lastmodifieddate"),
    "tickets": (HubSpotTicketEntity, ("subject", "content", "hs_pipeline", "hs_pipeline_stage", "hs_ticket_priority",
                                      "hs_ticket_category", "hubspot_owner_id", "createdate", "hs_lastmodifieddate"),
                "hs_lastmodifieddate"),
    "notes": (HubSpotNoteEntity, ("hs_note_body", "hs_timestamp", "hubspot_owner_id", "hs_createdate",
                                  "hs_lastmodifieddate"), "hs_lastmodifieddate"),
}
# HubSpot's object type ids in record URLs.
_RECORD_TYPE_IDS = {"contacts": "0-1", "companies": "0-2", "deals": "0-3", "tickets": "0-5"}
_SINGULAR = {"contacts": "contact", "companies": "company", "deals": "deal", "tickets": "ticket", "notes": "note"}


@source(
    name="HubSpot",
    short_name="hubspot",
    description="Contacts, companies, deals, tickets and notes of a HubSpot CRM.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(ConfigField("private_app_token", "Private app access token", "string",
                             "The access token of a HubSpot private app with the crm.objects.*.read and tickets "
                             "scopes (Settings → Integrations → Private apps).", required=True, is_secret=True),),
    config_fields=(
        ConfigField("object_types", "Object types", "array",
                    f"CRM objects to index, any of: {', '.join(OBJECT_TYPES)} (default: all).",
                    items_type="string", default=list(OBJECT_TYPES)),
    ),
    labels=("CRM",),
    entity_types=tuple(cls for cls, _, _ in OBJECT_TYPES.values()),
    rate_limit_level="connection",
    rate_limit="100/10seconds",
    base_url="https://api.hubapi.com",
)
class HubSpotSource(ObjectTypesSource, BaseSource):
    """Lists HubSpot CRM objects; see the module docstring."""

    OBJECT_TYPES = OBJECT_TYPES
    TOKEN_FIELD = "private_app_token"

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._portal = self._account()
        for object_type in self.config.get("object_types") or list(OBJECT_TYPES):
            since = self._marks.since(object_type)
            try:
                listing = self._search(object_type, since) if since else self._list(object_type)
                for obj in listing:
                    self._marks.advance(object_type, obj.get("updatedAt"))
                    yield self._entity(object_type, obj)
                if since:
                    self._archived(object_type, since)
            except HttpError as exc:
                raise _scope_error(exc, object_type) or exc from None

    # --- requests ---------------------------------------------------------------------------

    def _account(self) -> dict:
        """{"portalId", "uiDomain"} of the account, or {} when this token may not read it."""
        try:
            return self.http.get_json("/account-info/v3/details")
        except HttpError as exc:
            if exc.status in (403, 404):
                return {}
            raise

    def _list(self, object_type: str, archived: bool = False) -> Iterator[dict]:
        properties = ",".join(OBJECT_TYPES[object_type][1])

        def fetch(after):
            params = {"limit": PAGE, "properties": properties, "archived": str(archived).lower()}
            if after:
                params["after"] = after
            body = self.http.get_json(f"/crm/v3/objects/{object_type}", params=params)
            return body.get("results") or [], ((body.get("paging") or {}).get("next") or {}).get("after")

        return items(fetch)

    def _search(self, object_type: str, since: str) -> Iterator[dict]:
        _, properties, modified = OBJECT_TYPES[object_type]
        floor = parse_time(since)
        while True:
            newest, count = floor, 0

            def fetch(after, floor=floor):
                body = {"filterGroups": [{"filters": [{"propertyName": modified, "operator": "GTE",
                                                       "value": str(int(floor.timestamp() * 1000))}]}],
                        "sorts": [{"propertyName": modified, "direction": "ASCENDING"}],
                        "properties": list(properties), "limit": PAGE}
                if after:
                    body["after"] = after
                answer = self.http.post(f"/crm/v3/objects/{object_type}/search", json=body, idempotent=True).json()
                next_after = ((answer.get("paging") or {}).get("next") or {}).get("after")
                if next_after and int(next_after) >= SEARCH_WINDOW:
                    next_after = None  # past the window: restart from the newest mark below
                return answer.get("results") or [], next_after

            for obj in items(fetch):
                count += 1
                updated = parse_time(obj.get("updatedAt"))
                if updated and updated > newest:
                    newest = updated
                yield obj
            if count < SEARCH_WINDOW or newest <= floor:
                return
            floor = newest

    def _archived(self, object_type: str, since: str) -> None:
        floor = parse_time(since)
        for obj in self._list(object_type, archived=True):
            archived_at = parse_time(obj.get("archivedAt"))
            if archived_at is None or archived_at >= floor:
                self._marks.delete(f"{_SINGULAR[object_type]}:{obj['id']}")

    # --- entities ---------------------------------------------------------------------------

    def _entity(self, object_type: str, obj: dict) -> HubSpotEntity:
        cls = OBJECT_TYPES[object_type][0]
        p = {k: v for k, v in (obj.get("properties") or {}).items() if k in OBJECT_TYPES[object_type][1]}
        portal = str(self._portal.get("portalId") or "")
        breadcrumbs = [Breadcrumb(portal, f"HubSpot {portal}", "HubSpotAccount")] if portal else []
        record = _RECORD_TYPE_IDS.get(object_type)
        web_url = (f"https://{self._portal.get('uiDomain') or 'app.hubspot.com'}/contacts/{portal}/record/"
                   f"{record}/{obj['id']}") if portal and record else ""
        common = dict(entity_id=f"{_SINGULAR[object_type]}:{obj['id']}", breadcrumbs=breadcrumbs,
                      created_at=parse_time(obj.get("createdAt")), updated_at=parse_time(obj.get("updatedAt")),
                      web_url=web_url, url=f"https://api.hubapi.com/crm/v3/objects/{object_type}/{obj['id']}",
                      object_type=object_type, properties=p, owner_id=p.get("hubspot_owner_id") or "")
        meta = {"hubspot_id": obj["id"], "object_type": object_type, "owner_id": p.get("hubspot_owner_id")}
        if cls is HubSpotContactEntity:
            name = " ".join(x for x in (p.get("firstname"), p.get("lastname")) if x) or p.get("email") or obj["id"]
            if p.get("associatedcompanyid") and portal:
                breadcrumbs.append(Breadcrumb(f"company:{p['associatedcompanyid']}", p.get("company") or
                                              p["associatedcompanyid"], "HubSpotCompanyEntity"))
            return cls(name=name, email=p.get("email") or "", company_name=p.get("company") or "",
                       raw_source_fields=compact({**meta, "email": p.get("email"),
                                                  "lifecycle_stage": p.get("lifecyclestage"),
                                                  "lead_status": p.get("hs_lead_status"),
                                                  "company_id": p.get("associatedcompanyid")}), **common)
        if cls is HubSpotCompanyEntity:
            return cls(name=p.get("name") or p.get("domain") or obj["id"], domain=p.get("domain") or "",
                       raw_source_fields=compact({**meta, "domain": p.get("domain"), "industry": p.get("industry"),
                                                  "country": p.get("country"),
                                                  "lifecycle_stage": p.get("lifecyclestage")}), **common)
        if cls is HubSpotDealEntity:
            return cls(name=p.get("dealname") or obj["id"], amount=_number(p.get("amount")),
                       stage=p.get("dealstage") or "", pipeline=p.get("pipeline") or "",
                       raw_source_fields=compact({**meta, "amount": _number(p.get("amount")),
                                                  "stage": p.get("dealstage"), "pipeline": p.get("pipeline"),
                                                  "close_date": p.get("closedate")}), **common)
        if cls is HubSpotTicketEntity:
            return cls(name=p.get("subject") or f"Ticket {obj['id']}", content=p.get("content") or "",
                       priority=p.get("hs_ticket_priority") or "",
                       raw_source_fields=compact({**meta, "priority": p.get("hs_ticket_priority"),
                                                  "pipeline": p.get("hs_pipeline"),
                                                  "stage": p.get("hs_pipeline_stage"),
                                                  "category": p.get("hs_ticket_category")}), **common)
        body = html_text(p.get("hs_note_body"))
        first_line = next((line.strip() for line in body.splitlines() if line.strip()), "")
        return cls(name=f"Note: {first_line[:80]}" if first_line else f"Note {obj['id']}", body=body,
                   raw_source_fields=compact({**meta, "timestamp": p.get("hs_timestamp")}), **common)


def _number(value) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _scope_error(exc: HttpError, object_type: str) -> AuthFailure | None:
    """HubSpot's 403 `{"category": "MISSING_SCOPES"}` as an AuthFailure the user can act on."""
    if exc.status == 403 and "MISSING_SCOPES" in (exc.body or ""):
        return AuthFailure(f"HubSpot refused to list {object_type}: the app lacks a scope for them; grant it "
                           f"(and authenticate again) or remove '{object_type}' from object_types",
                           "insufficient_scope")
    return None
