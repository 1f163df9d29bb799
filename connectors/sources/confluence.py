"""Confluence: the spaces, pages, blog posts and comments of a Confluence site (Cloud, Server or Data Center).

Config: `site_url` (the user's host: SSRF-guarded; a Cloud site gets `/wiki` appended),
`spaces` (space keys; empty = every space the account can read), `include_comments` (default
true). Auth: email + API token, a personal access token, or OAuth 2.0 (3LO) through
api.atlassian.com (`/ex/confluence/<cloud id>/wiki/...`); see `_atlassian.py`.

API (REST v1, on Cloud and Server alike):
- `GET /rest/api/space?limit=50&expand=description.plain` for the spaces;
- `GET /rest/api/content/search?cql=...&expand=body.storage,version,space,ancestors,history,container`
  for pages, blog posts and comments in one listing, paged by `_links.next` (a cursor on Cloud,
  `start` on Server). The storage format (XHTML) is turned into text by the HTML converter.

Entities: ConfluenceSpaceEntity (`entity_id` "space:<key>"), ConfluencePageEntity and
ConfluenceBlogPostEntity (the content id; breadcrumbs: space, then the page's ancestors),
ConfluenceCommentEntity (the comment id; breadcrumbs: space, ancestors, the page commented on).

Incremental: CQL `lastmodified >= now("-<n>m")` with n the minutes since the newest version seen
plus a margin (a relative date, since CQL reads absolute ones in the account's time zone).
Confluence reports no deletions, so an incremental run also lists the ids of all content in
scope (no expansions: cheap) as `present_entity_ids()`: known content absent from it (trashed or
deleted content drops out of CQL results) is deleted. Cursor: `{"modified": <ISO time>}`.

Access: page view restrictions are not mirrored. Restrictions inherit from ancestors, combine
with space permissions, and Cloud hides most users' emails, so a faithful viewer list is not
cheap; the content stays visible to the organization.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from django.conf import settings

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, SourceError
from connectors.converters import convert_bytes
from connectors.http import HttpError
from connectors.sources._atlassian import (
    AtlassianCommentEntity, AtlassianMixin, atlassian_source, clean_keys, minutes_since, newer, validate_site,
)
from connectors.sources._saas import parse_time

_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_-]{1,255}$")
CONTENT_EXPAND = "body.storage,version,space,ancestors,history,container"


def storage_to_text(xhtml: str) -> str:
    """The text of a storage-format body ("" when there is none)."""
    if not xhtml or not xhtml.strip():
        return ""
    try:
        return convert_bytes(f"<html><body>{xhtml}</body></html>".encode(), Path("body.html"),
                             max_bytes=settings.AIRWEAVE_MAX_FILE_BYTES).text
    except SkipEntity:
        return ""


@dataclass
class ConfluenceSpaceEntity(BaseEntity):
    """A space: its name and description."""

    key: str = ""
    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nConfluence space {self.key}\n\n{self.description}".strip()


@dataclass
class ConfluencePageEntity(BaseEntity):
    """A page and its body as text."""

    space_key: str = ""
    author: str = ""
    version: int = 0
    body: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.body}".strip()


@dataclass
class ConfluenceBlogPostEntity(ConfluencePageEntity):
    """A blog post of a space."""


@dataclass
class ConfluenceCommentEntity(AtlassianCommentEntity):
    """A comment on a page or a blog post (footer or inline)."""


@atlassian_source(
    name="Confluence",
    short_name="confluence",
    mirrored_permissions=(("space permissions and page restrictions: not mirrored yet, pages are visible to "
                           "the whole organization", False),),
    description="Spaces, pages, blog posts and comments of a Confluence Cloud, Server or Data Center site.",
    scope_field=ConfigField("spaces", "Spaces", "array", "Keys of the spaces to index, e.g. ENG; empty for every "
                            "space the account can read.", items_type="string", default=[]),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(ConfluenceSpaceEntity, ConfluencePageEntity, ConfluenceBlogPostEntity, ConfluenceCommentEntity),
)
class ConfluenceSource(AtlassianMixin, BaseSource):
    """Lists spaces, then pages, blog posts and comments by CQL; see the module docstring."""

    PRODUCT = "confluence"
    page_size = 50

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = validate_site(super().validate_config(config, for_api=for_api))
        parts = urlsplit(out["site_url"])
        if (parts.hostname or "").endswith(".atlassian.net") and not parts.path.rstrip("/").endswith("/wiki"):
            out["site_url"] += "/wiki"  # Cloud serves Confluence under /wiki
        return clean_keys(out, "spaces", _SPACE_KEY, "space keys like ENG or ~ann")

    def _root(self) -> str:
        """The base of `/rest/api/...` paths: the site (with its context path) or the OAuth gateway + /wiki."""
        base = self.api_base()
        return f"{base}/wiki" if self.uses_oauth else base

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        self._since = cursor.get("modified")
        self._newest = self._since
        self._ids: list[str] = []
        root = self._root()
        wanted = set(self.config.get("spaces") or [])
        spaces = {}
        for space in self._pages(f"{root}/rest/api/space", {"limit": self.page_size, "expand": "description.plain"}):
            if wanted and space["key"] not in wanted:
                continue
            spaces[space["key"]] = space
            entity = self._space(space)
            self._ids.append(entity.entity_id)
            yield entity
        missing = wanted - set(spaces)
        if missing:
            raise SourceError(f"Confluence space(s) {', '.join(sorted(missing))} do not exist or this account "
                              f"cannot read them", "config_error")
        if not spaces:
            return
        scope = self._scope(spaces)
        cql = scope
        if self._since:
            cql += f' AND lastmodified >= now("-{minutes_since(self._since)}m")'
        params = {"cql": cql + " ORDER BY created ASC", "limit": self.page_size, "expand": CONTENT_EXPAND}
        listed = []
        for content in self._pages(f"{root}/rest/api/content/search", params):
            entity = self._content(content)
            if entity is not None:
                listed.append(entity.entity_id)
                yield entity
        if self._since:  # which content still exists
            params = {"cql": scope + " ORDER BY created ASC", "limit": 200}
            listed = [str(c["id"]) for c in self._pages(f"{root}/rest/api/content/search", params)]
        self._ids.extend(listed)

    def _scope(self, spaces: dict) -> str:
        types = "page, blogpost, comment" if self.config.get("include_comments", True) else "page, blogpost"
        keys = ", ".join(f'"{key}"' for key in spaces)
        return f"type in ({types}) AND space in ({keys})"

    def _pages(self, url: str, params: dict) -> Iterator[dict]:
        """Every result of a v1 listing, following `_links.next` (relative to the API root)."""
        seen = set()
        root = self._root()
        while url:
            try:
                body = self.http.get_json(url, params=params)
            except HttpError as exc:
                if exc.status == 400:
                    raise SourceError(f"Confluence refused the query ({exc.body[:300]}); check the 'spaces' keys",
                                      "config_error") from None
                raise
            yield from body.get("results") or []
            following = (body.get("_links") or {}).get("next")
            if not following or following in seen:
                return
            seen.add(following)
            context = (body.get("_links") or {}).get("context") or ""
            if context and following.startswith(context + "/"):
                following = following[len(context):]
            url, params = root + following, None

    # --- entities -----------------------------------------------------------------------------

    def _web(self, links: dict) -> str:
        webui = (links or {}).get("webui") or ""
        return self.config["site_url"] + webui if webui.startswith("/") else webui

    def _space(self, space: dict) -> ConfluenceSpaceEntity:
        description = (((space.get("description") or {}).get("plain") or {}).get("value")) or ""
        return ConfluenceSpaceEntity(
            entity_id=f"space:{space['key']}", name=space.get("name") or space["key"], key=space["key"],
            web_url=self._web(space.get("_links")), description=description,
            raw_source_fields={"space_key": space["key"], "space_type": space.get("type"),
                               "status": space.get("status")})

    def _content(self, content: dict) -> BaseEntity | None:
        kind = content.get("type")
        space = content.get("space") or {}
        version = content.get("version") or {}
        history = content.get("history") or {}
        modified = version.get("when")
        self._newest = newer(self._newest, modified)
        crumbs = [Breadcrumb(f"space:{space.get('key', '')}", space.get("name") or space.get("key", ""),
                             "ConfluenceSpaceEntity")]
        crumbs += [Breadcrumb(str(a["id"]), a.get("title", ""), _entity_type(a.get("type")))
                   for a in content.get("ancestors") or []]
        author = ((history.get("createdBy") or {}).get("displayName")) or ""
        common = dict(entity_id=str(content["id"]), created_at=parse_time(history.get("createdDate")),
                      updated_at=parse_time(modified), web_url=self._web(content.get("_links")),
                      url=(content.get("_links") or {}).get("self", ""), author=author,
                      body=storage_to_text(((content.get("body") or {}).get("storage") or {}).get("value", "")))
        raw = {"space_key": space.get("key"), "content_type": kind, "version": version.get("number"),
               "author": author, "last_modified_by": (version.get("by") or {}).get("displayName")}
        if kind == "comment":
            container = content.get("container") or {}
            if container and str(container.get("id")) not in {c.entity_id for c in crumbs}:
                crumbs.append(Breadcrumb(str(container["id"]), container.get("title", ""),
                                         _entity_type(container.get("type"))))
            raw["container_id"] = str(container.get("id", ""))
            return ConfluenceCommentEntity(name=content.get("title") or f"Comment on {container.get('title', '')}",
                                           breadcrumbs=crumbs, raw_source_fields=raw, **common)
        if kind not in ("page", "blogpost"):
            return None
        cls = ConfluenceBlogPostEntity if kind == "blogpost" else ConfluencePageEntity
        return cls(name=content.get("title") or "Untitled", breadcrumbs=crumbs, space_key=space.get("key", ""),
                   version=version.get("number") or 0, raw_source_fields=raw, **common)

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._since

    def present_entity_ids(self) -> set[str]:
        return set(self._ids)

    def next_cursor(self) -> dict:
        return {"modified": self._newest}


def _entity_type(kind: str | None) -> str:
    return {"blogpost": "ConfluenceBlogPostEntity", "comment": "ConfluenceCommentEntity"}.get(
        kind or "", "ConfluencePageEntity")
