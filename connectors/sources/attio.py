"""Attio: the companies, people and deals of an Attio workspace, and the notes on them.

Auth: an access token (Workspace settings → Developers → an integration's access token, with
read scopes on records, objects and notes), sent as `Authorization: Bearer <token>`, or OAuth 2
(browser flow, bring-your-own client, or an injected token; Attio's tokens do not expire:
`access_only`, the `attio` entry of oauth_providers.yml). A refused token (401) marks the
connection `needs_reauth`. Config: `objects` (object slugs, default companies, people, deals;
a workspace without an object answers 404 for it, which is skipped).

API (v2, `https://api.attio.com`): `POST /v2/objects/{object}/records/query` with `{"limit": 500,
"offset": N}` (read-only, retried like a GET), paged until a page is short; `GET /v2/notes?limit=50
&offset=N`. Attio allows 100 reads a second and answers 429 with Retry-After, which the shared
client waits out.

Entities: AttioRecordEntity (`record:{record_id}`: the record's attribute values as "attribute:
value" lines; breadcrumb: its object; `web_url` the record's `web_url`), AttioNoteEntity
(`note:{note_id}`: title and plain-text content; breadcrumb: the record it is on).

Sync: Attio's record query has no "changed since" filter, so every run is a full listing (as
monday's): unchanged records and notes are kept by their content hash without being embedded
again, and records and notes no longer listed are deleted (within the partial-listing guard).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import parse_time

API = "https://api.attio.com"
RECORD_LIMIT = 500
NOTE_LIMIT = 50
SKIPPED_ATTRIBUTES = {"record_id", "created_at", "created_by"}


def _value(v: dict):
    """The readable part of one Attio attribute value, whatever its type ('' when none)."""
    for key in ("full_name", "value", "domain", "email_address", "original_phone_number", "locality"):
        if v.get(key) not in (None, ""):
            return v[key]
    if v.get("currency_value") is not None:
        return f"{v['currency_value']} {v.get('currency_code') or ''}".strip()
    for key in ("option", "status"):
        if isinstance(v.get(key), dict) and v[key].get("title"):
            return v[key]["title"]
    if v.get("target_record_id"):
        return f"{v.get('target_object')}:{v['target_record_id']}"
    return ""


@dataclass
class AttioRecordEntity(BaseEntity):
    """A record: its attributes as 'attribute: value' lines."""

    object_slug: str = ""
    attributes: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.object_slug} record\n\n{self.attributes}".strip()


@dataclass
class AttioNoteEntity(BaseEntity):
    """A note: its title (`name`) and plain-text content."""

    content: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.content}".strip()


@source(
    name="Attio",
    short_name="attio",
    description="Companies, people and deals of an Attio workspace, with the notes on them.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("access_token", "Access token", "string", "Workspace settings → Developers.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("objects", "Objects", "array", "Object slugs to index.", items_type="string",
                               default=["companies", "people", "deals"]),),
    labels=("CRM",),
    entity_types=(AttioRecordEntity, AttioNoteEntity),
    rate_limit_level="connection",
    rate_limit="100/second",
    base_url=API,
)
class AttioSource(BaseSource):
    """Lists every record and note each run; see the module docstring.

    The direct credential is named `access_token` like an OAuth token, so both are sent by the
    default bearer auth (`http_auth()` is not overridden).
    """

    def _records(self, slug: str) -> Iterator[dict]:
        offset = 0
        while True:
            data = self.http.post(f"/v2/objects/{slug}/records/query", json={"limit": RECORD_LIMIT, "offset": offset},
                                  idempotent=True).json().get("data") or []
            yield from data
            if len(data) < RECORD_LIMIT:
                return
            offset += RECORD_LIMIT

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        names: dict[str, str] = {}
        for slug in self.config.get("objects") or []:
            try:
                records = list(self._records(slug))
            except HttpError as exc:
                if exc.status == 404:  # the workspace has no such object
                    continue
                raise
            for record in records:
                entity = self._record(slug, record)
                names[record["id"]["record_id"]] = entity.name
                yield entity
        offset = 0
        while True:
            notes = self.http.get_json("/v2/notes", params={"limit": NOTE_LIMIT, "offset": offset}).get("data") or []
            for note in notes:
                parent = note.get("parent_record_id")
                crumbs = [Breadcrumb(f"record:{parent}", names.get(parent, parent), "AttioRecordEntity")] \
                    if parent else []
                yield AttioNoteEntity(
                    entity_id=f"note:{note['id']['note_id']}", name=note.get("title") or "Note",
                    content=note.get("content_plaintext") or "", breadcrumbs=crumbs,
                    created_at=parse_time(note.get("created_at")),
                    raw_source_fields={"parent_object": note.get("parent_object"), "parent_record_id": parent})
            if len(notes) < NOTE_LIMIT:
                return
            offset += NOTE_LIMIT

    def _record(self, slug: str, record: dict) -> AttioRecordEntity:
        values = record.get("values") or {}
        lines, fields = [], {}
        for attribute, entries in values.items():
            if attribute in SKIPPED_ATTRIBUTES:
                continue
            shown = [str(_value(v)) for v in entries or [] if _value(v) != ""]
            if shown:
                lines.append(f"{attribute}: {', '.join(shown)}")
                fields[attribute] = shown if len(shown) > 1 else shown[0]
        name_values = values.get("name") or []
        name = str(_value(name_values[0])) if name_values else record["id"]["record_id"]
        return AttioRecordEntity(
            entity_id=f"record:{record['id']['record_id']}", name=name or record["id"]["record_id"], object_slug=slug,
            attributes="\n".join(lines), breadcrumbs=[Breadcrumb(f"object:{slug}", slug, "object")],
            created_at=parse_time(record.get("created_at")), web_url=record.get("web_url") or "",
            raw_source_fields={"object": slug, **{k: v for k, v in fields.items() if k != "name"}})
