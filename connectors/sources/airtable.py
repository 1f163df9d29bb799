"""Airtable: the records of the bases a token can read.

Auth: a personal access token (`data.records:read`, `schema.bases:read`), or OAuth 2 with PKCE
and rotating refresh tokens (Airtable issues a new refresh token with every refresh; the HTTP
client persists it). API: Web API v0.

- Bases: `GET meta/bases` (all, or those named by `base_ids`), paginated by `offset`; tables
  and their fields: `GET meta/bases/{base}/tables`. Base and table are the breadcrumbs.
- Records: `GET {base}/{table}?pageSize=100`, paginated by `offset`. A record's text is its
  fields as `Name: value` lines in the table's field order (linked records as ids,
  collaborators by name and address, attachments by file name); its name is the primary
  field's value.
- Incremental (`incremental` config): later runs ask only for records created or modified
  since the last run began (`filterByFormula` on `LAST_MODIFIED_TIME()` and `CREATED_TIME()`,
  with five minutes of overlap against clock skew), then list every record's id alone
  (`fields[]` = the primary field: small pages) for `present_entity_ids()`, so deleted
  records are still removed. Without it, every run is a full listing.
- Rate limit: 5 requests a second per base; a 429 asks for 30 seconds of quiet, so this
  source's retries back off from 4 seconds (4, 8, 16, 32 s) instead of 1.

Entities: AirtableRecordEntity, `entity_id` = "<base id>/<table id>/<record id>".
Cursor: `{"since": "<ISO time>"}` (incremental runs only).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import parse_time

OVERLAP = timedelta(minutes=5)
PAGE_SIZE = 100


@dataclass
class AirtableRecordEntity(BaseEntity):
    """One record of an Airtable table."""

    base_id: str = ""
    table_id: str = ""
    table_name: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nTable: {self.table_name}\n\n{self.text}".strip()


@source(
    name="Airtable",
    short_name="airtable",
    description="Records of Airtable bases, their fields as text and metadata, bases and tables as breadcrumbs.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_rotating_refresh",
    auth_fields=(ConfigField("personal_access_token", "Personal access token", "string",
                             "A token with the data.records:read and schema.bases:read scopes (airtable.com/create/tokens).",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("base_ids", "Bases", "array", "Ids of the bases to index (appXXXXXXXXXXXXXX); all the token "
                    "can read when empty.", items_type="string", default=[]),
        ConfigField("incremental", "Incremental", "boolean",
                    "Fetch only records changed since the last sync (LAST_MODIFIED_TIME()), plus the ids of all "
                    "records to find deletions.", default=False),
    ),
    labels=("Database",),
    entity_types=(AirtableRecordEntity,),
    rate_limit_level="connection",
    rate_limit="5/second",
    base_url="https://api.airtable.com/v0",
)
class AirtableSource(BaseSource):
    """Lists the records of bases and tables; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        bad = [b for b in out.get("base_ids") or [] if not (b.startswith("app") and b[3:].isalnum())]
        if bad:
            raise ValueError(f"config field 'base_ids' takes base ids like appLkNDICXNqxSDhG; not: {', '.join(bad)}")
        return out

    def http_auth(self):
        token = self.credentials.get("personal_access_token")
        return BearerAuth(token) if token else super().http_auth()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.http.backoff_base = 4.0  # Airtable asks for 30 s of quiet after a 429
        started = datetime.now(timezone.utc)
        since = (cursor or {}).get("since") if self.config.get("incremental") else None
        self._full = not since
        self._present: set[str] | None = None if self._full else set()
        self._since = (started - OVERLAP).isoformat().replace("+00:00", "Z") if self.config.get("incremental") else None
        for base in self._bases():
            crumb = Breadcrumb(base["id"], base.get("name") or base["id"], "AirtableBase")
            for table in self._tables(base["id"]):
                yield from self._records(base["id"], crumb, table, since)

    def _paged(self, url: str, key: str, params: dict | None = None) -> Iterator[dict]:
        params, seen = dict(params or {}), set()
        while True:
            body = self.http.get_json(url, params=params)
            yield from body.get(key) or []
            offset = body.get("offset")
            if not offset or offset in seen:
                return
            seen.add(offset)
            params["offset"] = offset

    def _bases(self) -> list[dict]:
        wanted = self.config.get("base_ids") or []
        bases = list(self._paged("meta/bases", "bases"))
        if not wanted:
            return bases
        known = {b["id"] for b in bases}
        missing = [b for b in wanted if b not in known]
        if missing:
            raise SourceError(f"Airtable base(s) {', '.join(missing)} are not readable with this token",
                              "config_error")
        return [b for b in bases if b["id"] in wanted]

    def _tables(self, base_id: str) -> list[dict]:
        return self.http.get_json(f"meta/bases/{base_id}/tables").get("tables") or []

    def _records(self, base_id: str, base_crumb: Breadcrumb, table: dict, since: str | None):
        crumbs = [base_crumb, Breadcrumb(table["id"], table.get("name") or table["id"], "AirtableTable")]
        fields = table.get("fields") or []
        primary = next((f["name"] for f in fields if f.get("id") == table.get("primaryFieldId")), None)
        params = {"pageSize": PAGE_SIZE}
        if since:
            params["filterByFormula"] = (f"OR(IS_AFTER(LAST_MODIFIED_TIME(), DATETIME_PARSE('{since}')), "
                                         f"IS_AFTER(CREATED_TIME(), DATETIME_PARSE('{since}')))")
        try:
            for record in self._paged(f"{base_id}/{table['id']}", "records", params):
                yield self._entity(base_id, table, crumbs, fields, primary, record)
            if self._present is not None:
                ids = {"pageSize": PAGE_SIZE, **({"fields[]": table["primaryFieldId"]} if table.get("primaryFieldId")
                                                 else {})}
                for record in self._paged(f"{base_id}/{table['id']}", "records", ids):
                    self._present.add(f"{base_id}/{table['id']}/{record['id']}")
        except HttpError as exc:
            if exc.status in (403, 404):
                raise SourceError(f"Airtable table {table.get('name')} of base {base_id} is not readable "
                                  f"(HTTP {exc.status}); check the token's scopes and access", "config_error") from None
            raise

    def _entity(self, base_id, table, crumbs, fields, primary, record) -> AirtableRecordEntity:
        values = record.get("fields") or {}
        order = [f["name"] for f in fields if f["name"] in values] + [n for n in values if n not in
                                                                     {f["name"] for f in fields}]
        lines = [f"{name}: {_text(values[name])}" for name in order if _text(values[name])]
        name = _text(values.get(primary)) if primary else ""
        return AirtableRecordEntity(
            entity_id=f"{base_id}/{table['id']}/{record['id']}", name=name or record["id"], breadcrumbs=crumbs,
            created_at=parse_time(record.get("createdTime")),
            web_url=f"https://airtable.com/{base_id}/{table['id']}/{record['id']}",
            base_id=base_id, table_id=table["id"], table_name=table.get("name") or "", text="\n".join(lines),
            raw_source_fields={"base_id": base_id, "table": table.get("name"), "record_id": record["id"],
                               **{k: v for k, v in values.items() if isinstance(v, (str, int, float, bool))
                                  and len(str(v)) <= 200}},
        )

    def is_full_listing(self) -> bool:
        return self._full

    def present_entity_ids(self) -> set[str] | None:
        return self._present

    def next_cursor(self) -> dict:
        return {"since": self._since} if self._since else {}


def _text(value) -> str:
    """A cell value as text: lists joined, collaborators as "name <email>", attachments by file name."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(t for t in (_text(v) for v in value) if t)
    if isinstance(value, dict):
        if "filename" in value:
            return value["filename"]
        if "email" in value:
            return f"{value.get('name') or ''} <{value['email']}>".strip()
        if "name" in value:
            return str(value["name"])
        if "label" in value:  # a button field
            return str(value["label"])
        return ""
    return str(value).strip()
