"""Helpers shared by the business SaaS sources (CRM, help desk, task managers, billing).

These APIs differ in their wire formats but share one shape: "list the objects of type T,
page by page with pagination P, changed since the cursor C, and say which were deleted".
The pagination itself is `connectors.http.cursor_pages` / `offset_pages`; what is shared here:

- `parse_time(value)`: the timestamps of these APIs (ISO 8601 with `Z`, `+0000` or fractions;
  epoch seconds; epoch milliseconds) as aware datetimes.
- `html_text(fragment)`: an HTML body (notes, comments, articles) as plain text, through the
  product's HTML converter.
- `Watermarks`: the cursor bookkeeping of one run — per-stream high-water marks read from the
  last completed job's cursor and advanced as items are seen, the ids the service reported
  deleted, and whether the run is incremental (so not a full listing).
- `WatermarkSource`: the three contract methods (`is_full_listing`, `deleted_entity_ids`,
  `next_cursor`) answered from `self._marks`; `ListedSource` adds `present_entity_ids` for
  sources that list everything every run and read only what changed; `PeriodicFullListing`
  a full listing every `full_sync_days` for APIs that report no deletions.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, ClassVar, Iterator
from urllib.parse import urlsplit

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseSource, ConfigField, SkipEntity
from connectors.http import cursor_pages
from connectors.http.ssrf import BlockedAddress, check_url

_OFFSET_WITHOUT_COLON = re.compile(r"([+-]\d{2})(\d{2})$")
_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: Any, *, digit_strings_are_epochs: bool = True) -> datetime | None:
    """An API timestamp as an aware datetime (UTC when the value carries no zone); None when empty.

    Accepts ISO 8601 strings (`2024-01-02T03:04:05Z`, `...05.123+0000`, `2024-01-02`), HTTP dates
    (`Wed, 09 Sep 2009 09:20:02 GMT`), epoch
    seconds and epoch milliseconds (numbers, and digit strings unless `digit_strings_are_epochs`
    is False, as for database text columns; values above 10^11 are taken as milliseconds).
    Raises nothing: an unreadable value gives None.
    """
    if value is None or value == "" or isinstance(value, bool):
        return None
    if digit_strings_are_epochs and isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?", value.strip()):
        value = float(value)
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    text = str(value).strip().replace("Z", "+00:00")
    text = _OFFSET_WITHOUT_COLON.sub(r"\1:\2", text)
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        try:  # an HTTP date (RFC 1123: `Wed, 09 Sep 2009 09:20:02 GMT`), as Azure Storage and Egnyte answer
            parsed = parsedate_to_datetime(str(value).strip())
        except (TypeError, ValueError):
            return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def iso(value: datetime | None) -> str | None:
    """`value` as an ISO 8601 UTC string with a `Z` (`2024-01-02T03:04:05Z`), None for None."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")



def service_url(value: str, *, field: str, must_be: str) -> str:
    """The http(s) URL of a self-hosted service (a config field's `value`), without a trailing slash.

    Raises ValueError naming `field` when it is not an http(s) URL with a host and no query
    ("config field 'base_url' must be <must_be>"), or when the SSRF guard blocks its address
    (`connectors.http.ssrf.check_url`: private, loopback and link-local hosts unless allowed).
    """
    url = value.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ValueError(f"config field '{field}' must be {must_be}")
    try:
        check_url(url)
    except BlockedAddress as exc:
        raise ValueError(f"config field '{field}': {exc}") from None
    return url

def html_text(fragment: str | None) -> str:
    """The visible text of an HTML fragment (headings, lists and tables kept as Markdown-ish lines).

    Returns "" for an empty or unreadable fragment; never raises.
    """
    if not fragment or not fragment.strip():
        return ""
    if "<" not in fragment:
        return fragment.strip()
    from django.conf import settings

    from connectors.converters import convert_bytes

    try:
        return convert_bytes(fragment.encode("utf-8"), Path("fragment.html"),
                             max_bytes=int(getattr(settings, "AIRWEAVE_MAX_FILE_BYTES", 25 * 1024 * 1024))).text
    except SkipEntity:
        return ""


def chosen_object_types(config: dict, known) -> list[str]:
    """The config's `object_types`, checked against `known` (names, in order) and de-duplicated.

    Raises ValueError naming the unknown types and the valid ones (validate_config's contract).
    """
    unknown = [t for t in config["object_types"] if t not in known]
    if unknown or not config["object_types"]:
        raise ValueError(f"config field 'object_types' takes any of {', '.join(known)}"
                         f"{'; not: ' + ', '.join(unknown) if unknown else ''}")
    return list(dict.fromkeys(config["object_types"]))


def compact(fields: dict) -> dict:
    """`fields` without None, "" and empty lists: the filterable metadata of `raw_source_fields`."""
    return {k: v for k, v in fields.items() if v not in (None, "", [], {})}


def items(fetch) -> Iterator[dict]:
    """Every item of `cursor_pages(fetch)`, page after page (`fetch(cursor) -> (items, next_cursor)`)."""
    for page in cursor_pages(fetch):
        yield from page


class Watermarks:
    """The cursor bookkeeping of one run of an incremental source.

    `cursor` is the last completed job's cursor (`{}` on a first run or a forced full sync);
    the marks live under `cursor[key]` as `{stream: value}` where a stream is an object type,
    a project, a board... Values are compared with `>` so they must be of one comparable kind
    per stream (ISO strings in one format, epoch numbers, sync tokens that are simply replaced
    with `set`).
    """

    def __init__(self, cursor: dict | None, key: str = "since"):
        self.key = key
        self.previous: dict = dict((cursor or {}).get(key) or {})
        self.marks: dict = dict(self.previous)
        self.deleted: list[str] = []
        self.incremental = bool(self.previous)

    def expire(self, cursor: dict | None, days: int, now: float) -> float:
        """Drop the marks (a full listing) when the last full listing is `days` old; return its epoch time.

        For APIs that report no deletions: absent entities are deleted only by a full listing,
        so one comes back every `days`. The returned time goes into the next cursor as `full_at`.
        """
        full_at = (cursor or {}).get("full_at") or now
        if self.incremental and now - full_at >= days * 86400:
            self.previous, self.incremental = {}, False
        return full_at if self.incremental else now

    def since(self, stream: str):
        """The mark of `stream` saved by the last completed job, or None (list everything)."""
        return self.previous.get(stream)

    def advance(self, stream: str, value) -> None:
        """Raise the mark of `stream` to `value` if it is newer (None is ignored)."""
        if value is None:
            return
        current = self.marks.get(stream)
        if current is None or value > current:
            self.marks[stream] = value

    def set(self, stream: str, value) -> None:
        """Replace the mark of `stream` (opaque sync tokens and export cursors)."""
        if value is not None:
            self.marks[stream] = value

    def delete(self, entity_id: str) -> None:
        """Record an entity the service reported deleted."""
        self.deleted.append(entity_id)

    def cursor(self) -> dict:
        return {self.key: self.marks}


class WatermarkSource:
    """Mixin for a BaseSource whose `generate_entities` sets `self._marks = Watermarks(cursor)`."""

    _marks: Watermarks

    def is_full_listing(self) -> bool:
        return not self._marks.incremental

    def deleted_entity_ids(self):
        return self._marks.deleted

    def next_cursor(self) -> dict:
        return self._marks.cursor()


class ListedSource(WatermarkSource):
    """Mixin for a source that lists everything cheaply every run but reads only what changed.

    `generate_entities` sets `self._marks = Watermarks(cursor)` and `self._present = set()`,
    adds every entity id the listings hold to `self._present` (`present(entity_id)`), and
    yields only the items changed since their stream's mark. A run from a saved cursor is not a
    full listing; what the listings no longer hold is deleted (`present_entity_ids`).
    """

    _present: set

    def present(self, entity_id: str) -> str:
        """Record `entity_id` as listed this run; return it."""
        self._present.add(entity_id)
        return entity_id

    def present_entity_ids(self):
        return self._present


FULL_SYNC_DAYS = ConfigField("full_sync_days", "Days between full listings", "integer",
                             "The service reports no deletions: a full listing this often removes what was "
                             "deleted.", default=7)


class PeriodicFullListing(WatermarkSource):
    """Mixin for an incremental source whose API reports no deletions (ServiceNow, Freshservice, ...).

    Declare `FULL_SYNC_DAYS` among the config fields; `validate_config` checks it is 1..365 days
    (ValueError otherwise). `generate_entities` calls `self.start_marks(cursor)`: the marks of the
    last completed job, dropped when its last full listing is `full_sync_days` old, so that run is a
    full listing and the pipeline deletes what it no longer holds. The cursor carries `full_at`
    (epoch seconds of the last full listing) beside the marks.
    """

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        if not 1 <= out.get("full_sync_days", 7) <= 365:
            raise ValueError("config field 'full_sync_days' must be between 1 and 365")
        return out

    def start_marks(self, cursor: dict | None) -> Watermarks:
        """Set and return `self._marks` for this run (see the class docstring)."""
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        return self._marks

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}


class ObjectTypesSource(WatermarkSource):
    """Mixin for a BaseSource listing a SaaS API object type by object type (HubSpot, Stripe, Salesforce).

    `OBJECT_TYPES` names the types the source knows, in order; `validate_config` checks the
    config's `object_types` against it (chosen_object_types; ValueError otherwise).
    `TOKEN_FIELD` names the credential holding a static API token sent as a bearer token
    (a private app token, a secret key); without one, the default auth applies (OAuth).
    """

    OBJECT_TYPES: dict | tuple = ()
    TOKEN_FIELD = ""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        out["object_types"] = chosen_object_types(out, cls.OBJECT_TYPES)
        return out

    def http_auth(self):
        token = self.credentials.get(self.TOKEN_FIELD) if self.TOKEN_FIELD else None
        return BearerAuth(token) if token else super().http_auth()


class Roster:
    """Deletion detection for APIs without a deletion signal: the ids each stream listed last run.

    `cursor[key]` holds `{stream: [entity ids]}` from the last completed job. A stream that is
    listed whole again calls `listed(stream, ids)`; `deleted()` is then every id it listed
    before and not now. Streams not listed this run keep their old ids. Cost: the ids live in
    the cursor, so keep this for streams of thousands of items, not millions.
    """

    def __init__(self, cursor: dict | None, key: str = "ids"):
        self.key = key
        self.before: dict[str, list[str]] = dict((cursor or {}).get(key) or {})
        self.now: dict[str, list[str]] = dict(self.before)
        self._listed: set[str] = set()

    def listed(self, stream: str, entity_ids) -> None:
        """Record the complete listing of `stream` in this run."""
        self.now[stream] = list(dict.fromkeys(entity_ids))
        self._listed.add(stream)

    def forget(self, stream: str) -> None:
        """Drop a stream no longer synced (its entities are left to a forced full sync)."""
        self.now.pop(stream, None)

    def deleted(self) -> list[str]:
        out = []
        for stream in self._listed:
            current = set(self.now[stream])
            out.extend(i for i in self.before.get(stream, []) if i not in current)
        return out

    def cursor(self) -> dict:
        return {self.key: self.now}


class SelfHostedSource(BaseSource):
    """A source of a service at a URL the user gives (a wiki, a forum, a self-hosted server).

    Subclasses name the config field (`URL_FIELD`) and say what it must be (`URL_MUST_BE`, the
    end of the error message); `validate_config` checks it with `service_url` and `base_url`
    (what the shared HTTP client resolves relative paths against) is its value.
    """

    URL_FIELD: ClassVar[str] = "base_url"
    URL_MUST_BE: ClassVar[str] = "an http(s) URL"

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        out[cls.URL_FIELD] = service_url(out[cls.URL_FIELD], field=cls.URL_FIELD, must_be=cls.URL_MUST_BE)
        return out

    @property
    def base_url(self) -> str:
        return self.config[self.URL_FIELD]


_SUBDOMAIN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


class SubdomainSource(BaseSource):
    """A source of a vendor that gives each account its own subdomain (acme.zendesk.com, acme.myshopify.com).

    Subclasses name the config field (`SUBDOMAIN_FIELD`), the vendor's domain (`SUBDOMAIN_OF`,
    e.g. "zendesk.com") and whose subdomain it is (`SUBDOMAIN_OWNER`, e.g. "the account's").
    `validate_config` accepts the bare subdomain, the host or the URL (`https://acme.zendesk.com/`)
    and keeps the subdomain, so the host is always the vendor's; anything else raises ValueError.
    `base_url` is `https://<subdomain>.<SUBDOMAIN_OF>`.
    """

    SUBDOMAIN_FIELD: ClassVar[str] = "subdomain"
    SUBDOMAIN_OF: ClassVar[str] = ""
    SUBDOMAIN_OWNER: ClassVar[str] = "the account's"

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        value = re.sub(r"^https?://", "", str(out[cls.SUBDOMAIN_FIELD]).strip().lower()).removesuffix("/")
        value = value.removesuffix("." + cls.SUBDOMAIN_OF)
        if not _SUBDOMAIN.match(value):
            raise ValueError(f"config field '{cls.SUBDOMAIN_FIELD}' must be {cls.SUBDOMAIN_OWNER} subdomain only, "
                             f"e.g. 'acme' for https://acme.{cls.SUBDOMAIN_OF}")
        out[cls.SUBDOMAIN_FIELD] = value
        return out

    @property
    def base_url(self) -> str:
        return f"https://{self.config[self.SUBDOMAIN_FIELD]}.{self.SUBDOMAIN_OF}"
