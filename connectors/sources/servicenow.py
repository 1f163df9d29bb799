"""ServiceNow: the knowledge articles and the incidents of a ServiceNow instance.

Config: `instance_url` (`https://<instance>.service-now.com`, or the instance's own domain;
SSRF-guarded), `object_types` (`knowledge`, `incidents`; default both), `full_sync_days` (7).
Auth: a user's name and password (HTTP basic auth; the user needs read access to `kb_knowledge`
and `incident`, e.g. the `knowledge` and `itil` roles), or an OAuth access token of the
instance's OAuth provider (`oauth_token`, sent as a Bearer token). A refused login (401) marks the
connection `needs_reauth`.

API: the Table API, `GET /api/now/table/{kb_knowledge|incident}` with `sysparm_query` (an encoded
query ordered by `sys_updated_on`), `sysparm_display_value=all` (each field answers both its
`value` and its `display_value`), `sysparm_exclude_reference_link=true`, `sysparm_fields` and
`sysparm_limit`, paged by the `Link: <...>; rel="next"` header ServiceNow sends (its
`sysparm_offset`). Instances answer 429 with Retry-After when a rate limit rule is exceeded,
which the shared client waits out.

Entities: ServiceNowArticleEntity (`kb_knowledge:{sys_id}`: the title, the article's HTML as text;
breadcrumbs knowledge base → category; `web_url` `<instance>/kb_view.do?sysparm_article=<number>`),
ServiceNowIncidentEntity (`incident:{sys_id}`: number, short description, description, state,
priority, category, assignment group, resolution notes; `web_url` `<instance>/incident.do?sys_id=`).
Only published articles are indexed.

Incremental: cursor `{"since": {<table>: <newest sys_updated_on>}, "full_at": <epoch>}`. A run
asks for records updated since a day before the mark (encoded queries compare dates in the
user's time zone; records read twice are kept by their hash); an article that left the published
state is reported deleted. The Table API reports no deletions, so every `full_sync_days` a run is a
full listing and the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import (
    FULL_SYNC_DAYS, ObjectTypesSource, PeriodicFullListing, SelfHostedSource, compact, html_text, parse_time)

PAGE = 100
TABLES = {
    "knowledge": ("kb_knowledge", "number,short_description,text,kb_knowledge_base,kb_category,workflow_state,author,"
                                  "sys_view_count,sys_created_on,sys_updated_on,sys_id"),
    "incidents": ("incident", "number,short_description,description,state,priority,category,assignment_group,"
                              "assigned_to,close_notes,opened_at,resolved_at,sys_created_on,sys_updated_on,sys_id"),
}


@dataclass
class ServiceNowArticleEntity(BaseEntity):
    """A published knowledge article: its title (`name`) and text."""

    number: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.number}\n\n{self.text}".strip()


@dataclass
class ServiceNowIncidentEntity(BaseEntity):
    """An incident: its short description (`name`), description, classification and resolution."""

    number: str = ""
    description: str = ""
    details: str = ""
    resolution: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.number} {self.name}", self.details, self.description,
                                       f"Resolution: {self.resolution}" if self.resolution else "") if p)


@source(
    name="ServiceNow",
    short_name="servicenow",
    description="Knowledge articles and incidents of a ServiceNow instance.",
    auth_methods=("direct", "oauth_token"),
    auth_fields=(
        ConfigField("username", "User name", "string", "A user with read access to the knowledge base and incidents."),
        ConfigField("password", "Password", "string", is_secret=True),
    ),
    config_fields=(
        ConfigField("instance_url", "Instance URL", "string", "e.g. https://acme.service-now.com", required=True),
        ConfigField("object_types", "What to index", "array", "knowledge, incidents", items_type="string",
                    default=list(TABLES)),
        FULL_SYNC_DAYS,
    ),
    labels=("IT Service Management", "Knowledge Base"),
    entity_types=(ServiceNowArticleEntity, ServiceNowIncidentEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class ServiceNowSource(PeriodicFullListing, ObjectTypesSource, SelfHostedSource):
    """Reads kb_knowledge and incident through the Table API; see the module docstring."""

    OBJECT_TYPES = TABLES
    URL_FIELD = "instance_url"
    URL_MUST_BE = "the instance's https URL, e.g. https://acme.service-now.com"

    @classmethod
    def validate_auth(cls, credentials: dict) -> dict:
        out = super().validate_auth(credentials)
        if not (out.get("username") and out.get("password")):
            raise ValueError("credential fields 'username' and 'password' are both required (or connect with an "
                             "OAuth access token of the instance)")
        return out

    def http_auth(self):
        if self.credentials.get("username"):
            return BasicAuth(self.credentials["username"], self.credentials.get("password") or "")
        return super().http_auth()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        for kind in self.config["object_types"]:
            table, fields = TABLES[kind]
            since = self._marks.since(table)
            query = "ORDERBYsys_updated_on"
            if since:
                start = parse_time(since) - timedelta(days=1)
                query = f"sys_updated_on>={start:%Y-%m-%d %H:%M:%S}^{query}"
            elif table == "kb_knowledge":
                query = f"workflow_state=published^{query}"
            params = {"sysparm_query": query, "sysparm_display_value": "all", "sysparm_exclude_reference_link": "true",
                      "sysparm_fields": fields, "sysparm_limit": PAGE}
            for response in self.http.paginate(f"/api/now/table/{table}", params=params):
                for record in response.json().get("result") or []:
                    self._marks.advance(table, _value(record, "sys_updated_on"))
                    entity_id = f"{table}:{_value(record, 'sys_id')}"
                    if table == "kb_knowledge" and _value(record, "workflow_state") != "published":
                        self._marks.delete(entity_id)
                        continue
                    yield self._article(entity_id, record) if table == "kb_knowledge" else \
                        self._incident(entity_id, record)

    def _article(self, entity_id: str, r: dict) -> ServiceNowArticleEntity:
        crumbs = [Breadcrumb(f"{field}:{_value(r, field)}", _display(r, field), kind)
                  for field, kind in (("kb_knowledge_base", "ServiceNowKnowledgeBase"),
                                      ("kb_category", "ServiceNowCategory")) if _value(r, field)]
        return ServiceNowArticleEntity(
            entity_id=entity_id, name=_display(r, "short_description") or _value(r, "number"),
            number=_value(r, "number"), text=html_text(_value(r, "text")), breadcrumbs=crumbs,
            web_url=f"{self.base_url}/kb_view.do?sysparm_article={_value(r, 'number')}",
            created_at=parse_time(_value(r, "sys_created_on")), updated_at=parse_time(_value(r, "sys_updated_on")),
            raw_source_fields=compact({"number": _value(r, "number"), "author": _display(r, "author"),
                                       "knowledge_base": _display(r, "kb_knowledge_base"),
                                       "category": _display(r, "kb_category")}))

    def _incident(self, entity_id: str, r: dict) -> ServiceNowIncidentEntity:
        meta = compact({"state": _display(r, "state"), "priority": _display(r, "priority"),
                        "category": _display(r, "category"), "assignment_group": _display(r, "assignment_group"),
                        "assigned_to": _display(r, "assigned_to")})
        return ServiceNowIncidentEntity(
            entity_id=entity_id, name=_display(r, "short_description") or _value(r, "number"),
            number=_value(r, "number"), description=_value(r, "description"),
            details="; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in meta.items()),
            resolution=_value(r, "close_notes"), web_url=f"{self.base_url}/incident.do?sys_id={_value(r, 'sys_id')}",
            created_at=parse_time(_value(r, "opened_at") or _value(r, "sys_created_on")),
            updated_at=parse_time(_value(r, "sys_updated_on")),
            raw_source_fields={**meta, "number": _value(r, "number")})


def _value(record: dict, field: str) -> str:
    """The stored value of a field answered with `sysparm_display_value=all` ("" when absent)."""
    item = record.get(field)
    return (item.get("value") if isinstance(item, dict) else item) or ""


def _display(record: dict, field: str) -> str:
    """The display value of a field answered with `sysparm_display_value=all` (its value when absent)."""
    item = record.get(field)
    return (item.get("display_value") if isinstance(item, dict) else item) or _value(record, field)
