"""Confluence: the spaces, pages, blog posts and comments of a Confluence site (Cloud, Server or Data Center).

Config: `site_url` (the user's host: SSRF-guarded; a Cloud site gets `/wiki` appended),
`spaces` (space keys; empty = every space the account can read), `include_comments` (default
true). Auth: email + API token, a personal access token, or OAuth 2.0 (3LO) through
api.atlassian.com (`/ex/confluence/<cloud id>/wiki/...`); see `_atlassian.py`.

API (REST v1, on Cloud and Server alike):
- `GET /rest/api/space?limit=50&expand=description.plain,permissions` for the spaces;
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

Access (`supports_access_control`): who may read an item is its space's readers narrowed by every
view restriction on it and on the pages above it (a restricted ancestor restricts its descendants).
- space readers: the space listing asks `expand=permissions` (REST v1 on Cloud); the `read` /
  `space` grants name users and groups (`subjects.user` / `subjects.group`). A grant with
  `anonymousAccess` or `unlicensedAccess` opens the space to the organization; a space whose listing
  carries no permissions (Server / Data Center, which do not expose them over REST) is open too.
- view restrictions: `GET /rest/api/content/{id}/restriction/byOperation/read` (users and groups,
  paged by `start`/`limit`) for each page and blog post listed and for each ancestor (read once per
  run); an empty restriction inherits. Comments follow the page or blog post they are on.
- groups: `GET /rest/api/group` lists the site's groups and `GET /rest/api/group/member?name=` the
  members of each (`generate_access_memberships`, at each sync); groups are principals by name
  (`group:<name>`). Confluence groups do not nest.
One constraint (the space alone) keeps its principals as they are; a restriction under a space
intersects them, expanding groups into the users listed in the same run (see
`_atlassian.narrowed`). Users are principals by e-mail: Cloud hides most addresses, and a person
without a visible one is left out (the item stays closed to them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from django.conf import settings

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, SourceError
from connectors.converters import convert_bytes
from connectors.http import HttpError
from connectors.sources._atlassian import (
    AtlassianCommentEntity, AtlassianMixin, atlassian_source, clean_keys, minutes_since, narrowed, newer, user_principal,
    validate_site,
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
    mirrored_permissions=(
        ("space permissions: the users and groups who may view a space", True),
        ("page view restrictions (users and groups), inherited by the pages below", True),
        ("group members, listed at each sync", True),
        ("comments: the page or blog post they are on", True),
        ("anonymous and unlicensed access to a space: open to the organization", True),
        ("users whose e-mail address the profile hides (left out)", False),
        ("Server / Data Center space permissions (not exposed over REST: spaces open to the organization)", False),
        ("edit restrictions and space permissions other than view", False),
    ),
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
    supports_access_control = True

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
        for space in self._spaces():
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

    def _spaces(self) -> list[dict]:
        """The site's spaces with their permissions (read once per run)."""
        if getattr(self, "_space_list", None) is None:
            self._space_list = list(self._pages(f"{self._root()}/rest/api/space",
                                                {"limit": self.page_size, "expand": "description.plain,permissions"}))
        return self._space_list

    # --- access -------------------------------------------------------------------------------

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Every group of the site with its members (`user:<email>`); see the module docstring."""
        return [AccessMembership(group, member) for group, members in self._members().items() for member in members]

    def _members(self) -> dict[str, set[str]]:
        """{group name: {member principal}} of the site, read once per run (the group listing, then
        `group/member?name=` per group, both paged by `start`)."""
        if getattr(self, "_group_members", None) is None:
            root = self._root()
            self._group_members = {}
            for group in self._pages(f"{root}/rest/api/group", {"limit": 200}):
                members = set()
                for user in self._pages(f"{root}/rest/api/group/member", {"name": group["name"], "limit": 200}):
                    principal = user_principal(user)
                    if principal:
                        members.add(principal)
                self._group_members[group["name"]] = members
        return self._group_members

    def _space_readers(self, space_key: str) -> set[str] | None:
        """The principals who may view a space; None when it is open to the organization (anonymous or
        unlicensed access, or a listing without permissions)."""
        space = next((s for s in self._spaces() if s["key"] == space_key), None)
        grants = (space or {}).get("permissions")
        if grants is None:
            return None
        readers: set[str] = set()
        for grant in grants:
            operation = grant.get("operation") or {}
            if operation.get("operation") != "read" or operation.get("targetType") != "space":
                continue
            if grant.get("anonymousAccess") or grant.get("unlicensedAccess"):
                return None
            readers |= _subjects(grant.get("subjects"))
        return readers

    def _restriction(self, content_id: str) -> set[str]:
        """The users and groups of a content's read restriction (empty: not restricted), read once per run."""
        cache = self.__dict__.setdefault("_restrictions", {})
        if content_id not in cache:
            url = f"{self._root()}/rest/api/content/{content_id}/restriction/byOperation/read"
            principals: set[str] = set()
            start, limit = 0, 200
            while True:
                body = self.http.get_json(url, params={"start": start, "limit": limit})
                restrictions = body.get("restrictions") or {}
                principals |= _subjects(restrictions)
                sizes = [len((restrictions.get(k) or {}).get("results") or []) for k in ("user", "group")]
                if max(sizes, default=0) < limit:
                    break
                start += limit
            cache[content_id] = principals
        return cache[content_id]

    def _chain(self, content_id: str) -> list[str]:
        """A page's or blog post's ancestors then itself: from this run's listing, else read
        (`GET /rest/api/content/{id}?expand=ancestors`, for a comment whose page did not change)."""
        chains = self.__dict__.setdefault("_chains", {})
        if content_id and content_id not in chains:
            body = self.http.get_json(f"{self._root()}/rest/api/content/{content_id}", params={"expand": "ancestors"})
            chains[content_id] = [str(a["id"]) for a in body.get("ancestors") or []] + [content_id]
        return chains.get(content_id, [])

    def _access(self, space_key: str, chain: list[str]) -> dict:
        """The access fields of an item of `space_key` under the contents of `chain` (ancestors first, then the
        page itself)."""
        levels = []
        readers = self._space_readers(space_key)
        if readers is not None:
            levels.append(readers)
        for content_id in chain:
            restricted = self._restriction(content_id)
            if restricted:
                levels.append(restricted)
        members = self._members() if len(levels) > 1 else {}
        return narrowed(levels, members)

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
            web_url=self._web(space.get("_links")), description=description, **self._access(space["key"], []),
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
        chain = [str(a["id"]) for a in content.get("ancestors") or [] if a.get("type") in ("page", "blogpost")]
        if kind == "comment":
            container = content.get("container") or {}
            on = str(container.get("id", ""))
            chain = list(dict.fromkeys(chain + self._chain(on)))
            common.update(self._access(space.get("key", ""), chain))
            if container and str(container.get("id")) not in {c.entity_id for c in crumbs}:
                crumbs.append(Breadcrumb(str(container["id"]), container.get("title", ""),
                                         _entity_type(container.get("type"))))
            raw["container_id"] = str(container.get("id", ""))
            return ConfluenceCommentEntity(name=content.get("title") or f"Comment on {container.get('title', '')}",
                                           breadcrumbs=crumbs, raw_source_fields=raw, **common)
        if kind not in ("page", "blogpost"):
            return None
        chain.append(str(content["id"]))
        self.__dict__.setdefault("_chains", {})[str(content["id"])] = chain
        common.update(self._access(space.get("key", ""), chain))
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


def _subjects(subjects: dict | None) -> set[str]:
    """The principals of a v1 `{user: {results}, group: {results}}` block: `user:<email>` (users with a
    visible address) and `group:<name>`."""
    out: set[str] = set()
    for user in ((subjects or {}).get("user") or {}).get("results") or []:
        principal = user_principal(user)
        if principal:
            out.add(principal)
    for group in ((subjects or {}).get("group") or {}).get("results") or []:
        if group.get("name"):
            out.add(f"group:{group['name']}")
    return out


def _entity_type(kind: str | None) -> str:
    return {"blogpost": "ConfluenceBlogPostEntity", "comment": "ConfluenceCommentEntity"}.get(
        kind or "", "ConfluencePageEntity")
