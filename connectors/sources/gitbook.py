"""GitBook: the spaces and pages (Markdown) of a GitBook organization.

Config: `organization_id` (Settings → the organization's id), `spaces` (space ids; default every
space of the organization). Auth: a personal access token (Developer settings → Personal access
tokens), sent as `Authorization: Bearer <token>`; a refused token (401) marks the connection
`needs_reauth`.

API (v1, `https://api.gitbook.com`): `GET /v1/orgs/{org}/spaces?limit=100` (paged by the answer's
`next.page` token), then for a space whose `revision` changed, `GET /v1/spaces/{id}/content` (the
revision's page tree) and `GET /v1/spaces/{id}/content/page/{page id}?format=markdown` for each
document page. GitBook's 429 (with Retry-After) is the shared client's to wait out.

Entities: GitBookSpaceEntity (`space:{id}`), GitBookPageEntity (`page:{id}`: the page's Markdown;
breadcrumbs: the space, then the groups and parent pages of the tree; `web_url` the published
or app URL plus the page path). Link pages are left out.

Incremental: cursor `{"spaces": {<space id>: {"revision": <id>, "pages": [page ids]}}}`. A space
whose revision is unchanged is not read again; a changed one is read whole (unchanged pages are
kept by their content hash). Every run lists the spaces, and a changed space's tree is complete,
so pages gone from it and the pages of deleted spaces are deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import parse_time

API = "https://api.gitbook.com"


@dataclass
class GitBookSpaceEntity(BaseEntity):
    """A space: its title."""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nGitBook space"


@dataclass
class GitBookPageEntity(BaseEntity):
    """A page: its title (`name`), description and Markdown."""

    description: str = ""
    markdown: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.description, self.markdown) if p)


@source(
    name="GitBook",
    short_name="gitbook",
    description="Spaces and pages of a GitBook organization, read again only when a space's revision changes.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Personal access token", "string", "Developer settings → Personal "
                             "access tokens.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("organization_id", "Organization ID", "string", "The organization's id.", required=True),
        ConfigField("spaces", "Spaces", "array", "Space ids (default: every space).", items_type="string"),
    ),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(GitBookSpaceEntity, GitBookPageEntity),
    rate_limit_level="connection",
    rate_limit="5/second",
    base_url=API,
)
class GitBookSource(BaseSource):
    """Reads the spaces whose revision changed; see the module docstring."""

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"])

    def _spaces(self) -> Iterator[dict]:
        params = {"limit": 100}
        while True:
            body = self.http.get_json(f"/v1/orgs/{self.config['organization_id']}/spaces", params=params)
            yield from body.get("items") or []
            token = (body.get("next") or {}).get("page")
            if not token:
                return
            params = {"limit": 100, "page": token}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        before = dict((cursor or {}).get("spaces") or {})
        self._incremental = bool(before)
        self._spaces_state: dict[str, dict] = {}
        self._present: set[str] = set()
        wanted = set(self.config.get("spaces") or [])
        for space in self._spaces():
            if wanted and space["id"] not in wanted:
                continue
            sid = space["id"]
            self._present.add(f"space:{sid}")
            base = ((space.get("urls") or {}).get("published") or (space.get("urls") or {}).get("app") or "").rstrip("/")
            yield GitBookSpaceEntity(entity_id=f"space:{sid}", name=space.get("title") or sid, web_url=base,
                                     created_at=parse_time(space.get("createdAt")),
                                     updated_at=parse_time(space.get("updatedAt")))
            known = before.get(sid) or {}
            if known.get("revision") and known.get("revision") == space.get("revision"):
                self._spaces_state[sid] = known
                self._present.update(f"page:{p}" for p in known.get("pages") or [])
                continue
            yield from self._space_pages(space, base)

    def _space_pages(self, space: dict, base: str) -> Iterator[GitBookPageEntity]:
        sid = space["id"]
        revision = self.http.get_json(f"/v1/spaces/{sid}/content")
        seen: list[str] = []
        space_crumb = Breadcrumb(f"space:{sid}", space.get("title") or sid, "GitBookSpaceEntity")

        def walk(pages, crumbs):
            for page in pages or []:
                kind = page.get("type") or page.get("kind")
                if kind == "link":
                    continue
                if kind == "document" or kind == "sheet":
                    yield page, crumbs
                yield from walk(page.get("pages"), crumbs + [Breadcrumb(f"page:{page['id']}", page.get("title", ""),
                                                                        "GitBookPageEntity")])

        for page, crumbs in list(walk(revision.get("pages"), [space_crumb])):
            try:
                content = self.http.get_json(f"/v1/spaces/{sid}/content/page/{page['id']}",
                                             params={"format": "markdown"})
            except HttpError as exc:
                if exc.status == 404:
                    continue
                raise
            seen.append(page["id"])
            self._present.add(f"page:{page['id']}")
            yield GitBookPageEntity(
                entity_id=f"page:{page['id']}", name=content.get("title") or page.get("title") or page["id"],
                description=content.get("description") or "", markdown=content.get("markdown") or "",
                breadcrumbs=crumbs, web_url=f"{base}/{page.get('path', '')}".rstrip("/"),
                raw_source_fields={"space": space.get("title"), "path": page.get("path"),
                                   "revision": space.get("revision")})
        self._spaces_state[sid] = {"revision": space.get("revision") or revision.get("id"), "pages": seen}

    def is_full_listing(self) -> bool:
        return not self._incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return {"spaces": self._spaces_state}
