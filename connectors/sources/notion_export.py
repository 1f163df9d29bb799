"""Notion export: the "Markdown & CSV" export of a workspace or a page, as a folder or its zip.

Layout read: `Title <32 hex id>.md` pages, `Title <id>/` folders holding a page's subpages (or
a database's row pages), `Title <id>.csv` databases, and attached files beside them. Each
export is a snapshot: every run is a full listing and the content hash keeps what did not
change, so syncing a newer export updates edited pages and deletes removed ones.

Entities:
- NotionExportPageEntity: `entity_id` = the Notion page id (the 32 hex digits of the file name; the
  relative path when an export has no ids); name = the page's `# Title`, else the file name's
  title; breadcrumbs = the parent pages and databases (from the folders); `web_url` =
  `https://www.notion.so/<id>`; database properties (`Key: value` lines under the title) go to
  `raw_source_fields.properties`, and `Created` / `Last edited time` set the dates when they
  parse. Links to other pages of the export keep their text and lose their file paths.
- NotionExportDatabaseEntity: a database's CSV, rendered row by row (`Column: value | ...`).
- NotionExportFileEntity: an attached file the converters read (PDF, DOCX, ...).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, BlobEntity, Breadcrumb, ConfigField, SkipEntity, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS, convert_bytes
from connectors.registry import source
from connectors.sources._export_files import ExportTree, open_export, validate_export_path

MAX_PAGE_BYTES = 16 * 1024 * 1024
_ID = re.compile(r"^(?P<title>.*?)\s*(?P<id>[0-9a-f]{32})$")
_PROPERTY = re.compile(r"^(?P<key>[A-Za-z][\w .()/&-]{0,40}):\s+(?P<value>\S.*)$")
_LOCAL_LINK = re.compile(r"(!?)\[([^\]]*)\]\((?![a-z][a-z0-9+.-]*:)(?:[^()\s]|\([^()]*\))+\)")
_DATE_FORMATS = ("%B %d, %Y %I:%M %p", "%B %d, %Y", "%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%d")


@dataclass
class NotionExportPageEntity(BaseEntity):
    """A page (or a database row's page) of the export."""

    notion_id: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        if not self.text.strip():
            raise SkipEntity("empty: no text in page")
        return self.text


@dataclass
class NotionExportDatabaseEntity(BaseEntity):
    """A database, from its CSV export."""

    notion_id: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        if not self.text.strip():
            raise SkipEntity("empty: database has no rows")
        return self.text


@dataclass
class NotionExportFileEntity(BlobEntity):
    """A file attached to a page (PDF, Office document, ...)."""


def split_name(stem: str) -> tuple[str, str]:
    """("Title", "32-hex id") of a Notion export name; ("Title", "") when it carries no id."""
    match = _ID.match(stem)
    if match:
        return match.group("title").strip() or match.group("id"), match.group("id")
    return stem.strip(), ""


def page_properties(body: str) -> dict[str, str]:
    """The `Key: value` lines right under the page's title (Notion writes them there)."""
    lines = body.splitlines()
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].startswith("# "):
        i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    props: dict[str, str] = {}
    while i < len(lines):
        match = _PROPERTY.match(lines[i].strip())
        if not match:
            break
        props[match.group("key").strip()] = match.group("value").strip()
        i += 1
    return props


def strip_local_links(text: str) -> str:
    """`[Text](Other%20Page%20<id>.md)` → `Text`; images of the export are dropped; web links kept."""
    return _LOCAL_LINK.sub(lambda m: "" if m.group(1) else m.group(2), text)


def _parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


@source(
    name="Notion Export",
    short_name="notion_export",
    description="A Notion workspace export in Markdown & CSV (folder or zip): pages, subpages, databases "
                "and attached files.",
    auth_methods=("direct",),
    labels=("Knowledge Base",),
    entity_types=(NotionExportPageEntity, NotionExportDatabaseEntity, NotionExportFileEntity),
    config_fields=(
        ConfigField("path", "Export path", "string", "The unzipped export folder, or the export's .zip file.",
                    required=True),
    ),
)
class NotionExportSource(BaseSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        out["path"] = validate_export_path(out["path"], for_api=for_api)
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        tree = open_export(self.config["path"])
        names = tree.names()
        kinds = self._folder_kinds(names)
        for name in names:
            path = PurePosixPath(name)
            extension = path.suffix.lower()
            crumbs = self._breadcrumbs(path, kinds)
            if extension in (".md", ".markdown"):
                yield self._page(tree, name, crumbs)
            elif extension == ".csv":
                yield self._database(tree, name, crumbs)
            elif extension in SUPPORTED_EXTENSIONS:
                yield NotionExportFileEntity(
                    entity_id=name, name=path.name, breadcrumbs=crumbs, updated_at=tree.mtime(name),
                    raw_source_fields={"path": name, "extension": extension, "size_bytes": tree.size(name)},
                    file_name=path.name, size=tree.size(name),
                    load=lambda tree=tree, name=name: tree.read(name, MAX_PAGE_BYTES * 4),
                )

    @staticmethod
    def _folder_kinds(names: list[str]) -> dict[str, str]:
        """{folder path: entity type} for folders that belong to a page (.md) or a database (.csv)."""
        kinds: dict[str, str] = {}
        for name in names:
            path = PurePosixPath(name)
            if path.suffix.lower() in (".md", ".markdown"):
                kinds.setdefault(str(path.with_suffix("")), "NotionExportPageEntity")
            elif path.suffix.lower() == ".csv":
                kinds[str(path.with_suffix(""))] = "NotionExportDatabaseEntity"
        return kinds

    @staticmethod
    def _breadcrumbs(path: PurePosixPath, kinds: dict[str, str]) -> list[Breadcrumb]:
        crumbs = []
        for i in range(1, len(path.parts)):
            folder = "/".join(path.parts[:i])
            title, notion_id = split_name(path.parts[i - 1])
            crumbs.append(Breadcrumb(notion_id or folder, title, kinds.get(folder, "NotionFolder")))
        return crumbs

    def _page(self, tree: ExportTree, name: str, crumbs: list[Breadcrumb]) -> BaseEntity:
        path = PurePosixPath(name)
        file_title, notion_id = split_name(path.stem)
        try:
            data = tree.read(name, MAX_PAGE_BYTES)
            document = convert_bytes(data, "page.md", max_bytes=MAX_PAGE_BYTES)
        except SkipEntity as exc:
            return UnreadableEntity(entity_id=notion_id or name, name=file_title, reason=exc.reason)
        props = page_properties(document.text)
        created = _parse_date(props.get("Created") or props.get("Created time"))
        edited = _parse_date(props.get("Last edited time") or props.get("Last Edited")) or created
        return NotionExportPageEntity(
            entity_id=notion_id or name, name=document.title or file_title, breadcrumbs=crumbs,
            created_at=created, updated_at=edited,
            web_url=f"https://www.notion.so/{notion_id}" if notion_id else "",
            raw_source_fields={"path": name, "notion_id": notion_id, "properties": props,
                               **({"url": props["URL"]} if props.get("URL") else {})},
            notion_id=notion_id, text=strip_local_links(document.text),
        )

    def _database(self, tree: ExportTree, name: str, crumbs: list[Breadcrumb]) -> BaseEntity:
        path = PurePosixPath(name)
        title, notion_id = split_name(path.stem)
        if title.endswith("_all"):  # newer exports add "<db>_all.csv" beside the filtered view's CSV
            title = title[:-4]
        try:
            document = convert_bytes(tree.read(name, MAX_PAGE_BYTES), path.name, max_bytes=MAX_PAGE_BYTES)
        except SkipEntity as exc:
            return UnreadableEntity(entity_id=notion_id or name, name=title, reason=exc.reason)
        return NotionExportDatabaseEntity(
            entity_id=notion_id or name, name=title, breadcrumbs=crumbs,
            web_url=f"https://www.notion.so/{notion_id}" if notion_id else "",
            raw_source_fields={"path": name, "notion_id": notion_id},
            notion_id=notion_id, text=f"Database {title}\n\n{document.text}",
        )
