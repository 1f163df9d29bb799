"""Notion: the pages and databases (data sources) shared with an integration, with their content.

Auth: an internal integration secret (direct, `integration_secret`), or a public integration's
OAuth token (browser flow, bring-your-own client, or an injected token). Notion OAuth tokens
do not expire and come without a refresh token: `access_only`.

API (`https://api.notion.com/v1`, `Notion-Version: 2025-09-03`):
- `POST /search` sorted by `last_edited_time` descending, 100 a page (`start_cursor` /
  `next_cursor` / `has_more`) lists every page and data source the integration can read;
- `GET /blocks/{id}/children?page_size=100` (same pagination) gives a page's content, read
  recursively (nested lists, toggles, columns, tables, synced blocks) up to `MAX_DEPTH`;
  sub-pages and child databases are entities of their own, named in their parent's text;
- ancestors missing from the listing (on incremental runs) are read with `GET /pages/{id}`,
  `GET /data_sources/{id}` or `GET /blocks/{id}` for the breadcrumbs, once per run.
Budget: about 3 requests a second per integration, so the rate limit is per connection.

Entities: NotionPageEntity (`entity_id` = the page id; the text is its title, its properties
when it is a database row, and its blocks as Markdown) and NotionDatabaseEntity (a data source:
its title, description and property schema). Breadcrumbs: the ancestors, root first
(workspace-level pages have none).

Cursor: `{"last_edited_time": <newest seen>}`. Notion has no change feed, but the search
listing is cheap (metadata only), so an incremental run still lists everything and reads the
content of pages edited since the cursor only (Notion's `last_edited_time` is rounded to the
minute: pages of that very minute are read again, and the content hash keeps them). The ids
listed are `present_entity_ids()`: known pages absent from them (trashed, unshared) are deleted;
results marked `in_trash`/`archived` are reported through `deleted_entity_ids()`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError, cursor_pages
from connectors.notifications.vendors import NotionNotifications
from connectors.registry import source
from connectors.sources._saas import parse_time

logger = logging.getLogger(__name__)

NOTION_VERSION = "2025-09-03"
MAX_DEPTH = 8  # nesting levels of blocks read below a page


def plain_text(rich_text: list | None) -> str:
    """The text of a Notion rich-text array (mentions and equations included)."""
    return "".join(part.get("plain_text") or "" for part in rich_text or [])


def _title_of(obj: dict) -> str:
    if obj.get("object") in ("data_source", "database"):
        return plain_text(obj.get("title")).strip()
    for prop in (obj.get("properties") or {}).values():
        if prop.get("type") == "title":
            return plain_text(prop.get("title")).strip()
    block_type = obj.get("type")
    if block_type in ("child_page", "child_database"):
        return (obj.get(block_type) or {}).get("title", "")
    return ""


def property_text(prop: dict) -> str:
    """A database property value as short text ("" when empty)."""
    kind = prop.get("type")
    value = prop.get(kind)
    if value is None:
        return ""
    if kind in ("title", "rich_text"):
        return plain_text(value)
    if kind in ("select", "status"):
        return value.get("name", "")
    if kind == "multi_select":
        return ", ".join(v.get("name", "") for v in value)
    if kind in ("people", "created_by", "last_edited_by"):
        people = value if isinstance(value, list) else [value]
        return ", ".join(p.get("name") or p.get("id", "") for p in people)
    if kind == "date":
        return value.get("start", "") + (f" → {value['end']}" if value.get("end") else "")
    if kind == "checkbox":
        return "yes" if value else "no"
    if kind == "files":
        return ", ".join(f.get("name", "") for f in value)
    if kind == "relation":
        return ", ".join(r.get("id", "") for r in value)
    if kind == "unique_id":
        return f"{value.get('prefix') or ''}{'-' if value.get('prefix') else ''}{value.get('number')}"
    if kind in ("formula", "rollup"):
        inner = value.get(value.get("type"))
        if isinstance(inner, dict):
            return inner.get("start") or inner.get("name") or ""
        if isinstance(inner, list):
            return ", ".join(property_text(v) for v in inner if isinstance(v, dict))
        return "" if inner is None else str(inner)
    if isinstance(value, (str, int, float)):
        return str(value)  # number, url, email, phone_number, created_time, last_edited_time
    return ""


def _simple_properties(properties: dict) -> dict:
    """Filterable metadata: the non-empty property values of a database row, by property name."""
    out = {}
    for name, prop in properties.items():
        if prop.get("type") == "title":
            continue
        text = property_text(prop)
        if text:
            out[name] = prop[prop["type"]] if prop.get("type") in ("number", "checkbox") else text
    return out


@dataclass
class NotionPageEntity(BaseEntity):
    """A page (a database row included): its properties and its content as Markdown."""

    properties_text: str = ""
    content: str = ""
    parent_type: str = ""

    def textual_representation(self) -> str:
        head = f"# {self.name}" if self.name else ""
        return "\n\n".join(part for part in (head, self.properties_text, self.content) if part).strip()


@dataclass
class NotionDatabaseEntity(BaseEntity):
    """A database's data source: its title, description and the names and types of its properties."""

    description: str = ""
    schema: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        lines = [f"# {self.name}", "Notion database"]
        if self.description:
            lines.append(self.description)
        if self.schema:
            lines.append("Properties: " + ", ".join(self.schema))
        return "\n\n".join(lines)


@source(
    name="Notion",
    short_name="notion",
    mirrored_permissions=(("page and database permissions: Notion's API does not expose them, so pages are "
                           "visible to the whole organization", False),),
    notifications=NotionNotifications,
    description="Pages and databases of a Notion workspace shared with the integration, with their content.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("integration_secret", "Integration secret", "string",
                             "The internal integration secret (ntn_... or secret_...) of an integration the pages "
                             "are shared with.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("include_databases", "Include databases", "boolean",
                    "Index databases (their schema) and their rows.", default=True),
    ),
    labels=("Knowledge Base", "Productivity"),
    entity_types=(NotionPageEntity, NotionDatabaseEntity),
    rate_limit_level="connection",
    rate_limit="3/second",
    base_url="https://api.notion.com/v1",
)
class NotionSource(BaseSource):
    """Lists pages and data sources through search, reads page content; see the module docstring."""

    page_size = 100

    def http_auth(self):
        secret = self.credentials.get("integration_secret")
        return BearerAuth(secret) if secret else super().http_auth()

    def http_headers(self) -> dict:
        return {"Notion-Version": NOTION_VERSION}

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        self._since = cursor.get("last_edited_time")
        self._newest = self._since
        self._deleted: list[str] = []
        self._known: dict[str, dict] = {}  # id -> the object, for breadcrumbs
        listing = list(self._search())
        for obj in listing:
            self._known[obj["id"]] = obj
        self._listed = [obj["id"] for obj in listing]
        for obj in listing:
            edited = obj.get("last_edited_time") or ""
            if edited and (self._newest is None or edited > self._newest):
                self._newest = edited
            if self._since and edited < self._since:
                continue  # unchanged since the last run
            if obj["object"] == "data_source":
                if self.config.get("include_databases", True):
                    yield self._database(obj)
                continue
            if not self.config.get("include_databases", True) and _parent_id(obj)[0] in ("data_source_id",
                                                                                       "database_id"):
                continue
            page = self._page(obj)
            if page is not None:
                yield page

    def _search(self) -> Iterator[dict]:
        def fetch(start_cursor):
            body = {"sort": {"direction": "descending", "timestamp": "last_edited_time"}, "page_size": self.page_size}
            if start_cursor:
                body["start_cursor"] = start_cursor
            answer = self.http.post("/search", json=body, idempotent=True).json()
            return answer.get("results") or [], answer.get("next_cursor") if answer.get("has_more") else None

        for results in cursor_pages(fetch):
            for obj in results:
                if obj.get("object") not in ("page", "data_source"):
                    continue
                if obj.get("in_trash") or obj.get("archived") or obj.get("is_archived"):
                    self._deleted.append(obj["id"])
                    continue
                yield obj

    # --- entities -----------------------------------------------------------------------------

    def _page(self, page: dict) -> NotionPageEntity | None:
        try:
            content = "\n".join(self._blocks(page["id"], 0)).strip()
        except HttpError as exc:
            if exc.status in (403, 404):  # unshared or deleted while the run went on: absent next time
                logger.info("Notion page %s unreadable (%s); skipped", page["id"], exc.status)
                self._listed.remove(page["id"])
                return None
            raise
        properties = page.get("properties") or {}
        parent_type, _ = _parent_id(page)
        is_row = parent_type in ("data_source_id", "database_id")
        props_text = ""
        raw = {"parent_type": parent_type, "created_by": (page.get("created_by") or {}).get("id"),
               "last_edited_by": (page.get("last_edited_by") or {}).get("id")}
        if is_row:
            simple = _simple_properties(properties)
            props_text = "\n".join(f"{name}: {property_text(prop)}" for name, prop in properties.items()
                                   if prop.get("type") != "title" and property_text(prop))
            raw["properties"] = simple
        return NotionPageEntity(
            entity_id=page["id"], name=_title_of(page) or "Untitled", breadcrumbs=self._breadcrumbs(page),
            created_at=parse_time(page.get("created_time")), updated_at=parse_time(page.get("last_edited_time")),
            web_url=page.get("url") or "", url=f"https://api.notion.com/v1/pages/{page['id']}",
            properties_text=props_text, content=content, parent_type=parent_type, raw_source_fields=raw)

    def _database(self, ds: dict) -> NotionDatabaseEntity:
        schema = [f"{name} ({prop.get('type')})" for name, prop in (ds.get("properties") or {}).items()]
        parent = ds.get("parent") or {}
        return NotionDatabaseEntity(
            entity_id=ds["id"], name=_title_of(ds) or "Untitled database", breadcrumbs=self._breadcrumbs(ds),
            created_at=parse_time(ds.get("created_time")), updated_at=parse_time(ds.get("last_edited_time")),
            web_url=ds.get("url") or "", url=f"https://api.notion.com/v1/data_sources/{ds['id']}",
            description=plain_text(ds.get("description")), schema=schema,
            raw_source_fields={"database_id": parent.get("database_id"), "is_inline": ds.get("is_inline", False),
                               "property_names": list((ds.get("properties") or {}).keys())})

    def _blocks(self, block_id: str, depth: int) -> Iterator[str]:
        """Markdown lines of the children of `block_id`, nested children indented."""
        def fetch(start_cursor):
            params = {"page_size": self.page_size}
            if start_cursor:
                params["start_cursor"] = start_cursor
            answer = self.http.get_json(f"/blocks/{block_id}/children", params=params)
            return answer.get("results") or [], answer.get("next_cursor") if answer.get("has_more") else None

        indent = "  " * depth
        number = 0
        for blocks in cursor_pages(fetch):
            for block in blocks:
                if block.get("in_trash") or block.get("archived"):
                    continue
                number = number + 1 if block.get("type") == "numbered_list_item" else 0
                line = block_markdown(block, number)
                if line:
                    yield indent + line
                if (block.get("has_children") and depth + 1 < MAX_DEPTH
                        and block.get("type") not in ("child_page", "child_database")):
                    yield from self._blocks(block["id"], depth + 1)

    # --- breadcrumbs --------------------------------------------------------------------------

    def _breadcrumbs(self, obj: dict) -> list[Breadcrumb]:
        crumbs: list[Breadcrumb] = []
        seen = {obj["id"]}
        current = obj
        while len(crumbs) < 10:
            kind, parent_id = _parent_id(current)
            if not parent_id or parent_id in seen:
                break
            seen.add(parent_id)
            parent = self._lookup(kind, parent_id)
            if parent is None:
                break
            if parent.get("object") != "block" or parent.get("type") in ("child_page", "child_database"):
                entity_type = {"data_source": "NotionDatabaseEntity", "database": "NotionDatabaseEntity"}.get(
                    parent.get("object"), "NotionPageEntity")
                crumbs.append(Breadcrumb(parent["id"], _title_of(parent) or "Untitled", entity_type))
            current = parent
        return list(reversed(crumbs))

    def _lookup(self, kind: str, object_id: str) -> dict | None:
        if object_id in self._known:
            return self._known[object_id]
        path = {"page_id": "pages", "data_source_id": "data_sources", "database_id": "databases",
                "block_id": "blocks"}.get(kind)
        if path is None:
            return None
        try:
            obj = self.http.get_json(f"/{path}/{object_id}")
        except HttpError as exc:
            if exc.status in (403, 404):  # not shared with the integration: the trail stops here
                self._known[object_id] = None
                return None
            raise
        self._known[object_id] = obj
        return obj

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._since

    def deleted_entity_ids(self) -> list[str]:
        return list(dict.fromkeys(self._deleted))

    def present_entity_ids(self) -> set[str]:
        return set(self._listed)

    def next_cursor(self) -> dict:
        return {"last_edited_time": self._newest}


def _parent_id(obj: dict) -> tuple[str, str | None]:
    """(parent type, parent id) of a page, data source, database or block; data sources climb to
    their database's parent (the database itself has no page of its own)."""
    parent = obj.get("database_parent") if obj.get("object") == "data_source" else obj.get("parent")
    parent = parent or {}
    kind = parent.get("type", "")
    if kind == "data_source_id":
        return kind, parent.get("data_source_id")
    if kind in ("page_id", "database_id", "block_id"):
        return kind, parent.get(kind)
    return kind, None


_PREFIX = {"heading_1": "# ", "heading_2": "## ", "heading_3": "### ", "bulleted_list_item": "- ",
           "quote": "> ", "toggle": "", "paragraph": "", "callout": ""}


def block_markdown(block: dict, number: int = 1) -> str:
    """One block as a line of Markdown ("" for blocks without text: dividers, columns, ...)."""
    kind = block.get("type", "")
    value = block.get(kind) or {}
    if kind in _PREFIX:
        text = plain_text(value.get("rich_text"))
        return f"{_PREFIX[kind]}{text}" if text else ""
    if kind == "numbered_list_item":
        return f"{number or 1}. {plain_text(value.get('rich_text'))}"
    if kind == "to_do":
        return f"[{'x' if value.get('checked') else ' '}] {plain_text(value.get('rich_text'))}"
    if kind == "code":
        return f"```{value.get('language') or ''}\n{plain_text(value.get('rich_text'))}\n```"
    if kind == "equation":
        return f"$$ {value.get('expression', '')} $$"
    if kind == "table_row":
        return "| " + " | ".join(plain_text(cell) for cell in value.get("cells") or []) + " |"
    if kind in ("child_page", "child_database"):
        return f"[{'Page' if kind == 'child_page' else 'Database'}: {value.get('title', '')}]"
    if kind in ("bookmark", "embed", "link_preview"):
        caption = plain_text(value.get("caption"))
        return f"{caption} <{value.get('url', '')}>".strip()
    if kind in ("image", "file", "pdf", "video", "audio"):
        caption = plain_text(value.get("caption")) or value.get("name") or ""
        return f"[{kind}: {caption}]" if caption else ""
    if kind == "divider":
        return "---"
    return ""
