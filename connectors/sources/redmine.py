"""Redmine: the projects and issues (with their journal notes) of a Redmine server.

Config: `base_url` (the server; SSRF-guarded), `projects` (identifiers; default every project
the key can see). Auth: an API key (My account → API access key; the REST API must be enabled
in Administration → Settings → API), sent as the `X-Redmine-API-Key` header, as Redmine
documents; a refused key (401) marks the connection `needs_reauth`.

API (REST, JSON): `GET /projects.json` and `GET /issues.json?status_id=*&sort=id` (open and closed;
`project_id=` when projects are chosen), both paged by `offset` / `limit=100` until
`total_count`; `GET /issues/{id}.json?include=journals` for the notes of an issue that changed.
A 429 or 5xx from a proxy in front of Redmine is the shared client's to retry.

Entities: RedmineProjectEntity (`project:{id}`; breadcrumb: the parent project),
RedmineIssueEntity (`issue:{id}`: "#id subject", tracker, status, priority, assignee,
description and the journal notes inside; breadcrumbs: the project; `web_url`
`<base>/issues/<id>`).

Incremental: cursor `{"since": {"issues": <newest updated_on>}}`. Every run lists projects and
issues (100 per request, no notes) and reads the notes of issues updated after the mark only;
the listings are complete, so deleted issues and projects are those they no longer hold
(`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import SelfHostedSource, Watermarks, parse_time

LIMIT = 100


@dataclass
class RedmineProjectEntity(BaseEntity):
    """A project: its name and description."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nRedmine project\n\n{self.description}".strip()


@dataclass
class RedmineIssueEntity(BaseEntity):
    """An issue with its journal notes ("author: note" each)."""

    tracker: str = ""
    status: str = ""
    priority: str = ""
    assignee: str = ""
    description: str = ""
    notes: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (self.tracker, f"status: {self.status}", f"priority: {self.priority}",
                                     f"assignee: {self.assignee}" if self.assignee else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.description, *self.notes) if p)


@source(
    name="Redmine",
    short_name="redmine",
    description="Projects and issues, with their journal notes, of a Redmine server.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "My account → API access key.", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("base_url", "Redmine URL", "string", "e.g. https://redmine.example.org", required=True),
        ConfigField("projects", "Projects", "array", "Project identifiers (default: every visible project).",
                    items_type="string"),
    ),
    labels=("Project Management", "Ticketing"),
    entity_types=(RedmineProjectEntity, RedmineIssueEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class RedmineSource(SelfHostedSource):
    """Lists projects and issues, reads the notes of changed issues; see the module docstring."""

    URL_MUST_BE = "the server's http(s) URL, e.g. https://redmine.example.org"

    def http_auth(self):
        return HeaderAuth({"X-Redmine-API-Key": self.credentials["api_key"]})

    def _list(self, path: str, key: str, params: dict | None = None) -> Iterator[dict]:
        offset = 0
        while True:
            body = self.http.get_json(path, params={**(params or {}), "offset": offset, "limit": LIMIT})
            rows = body.get(key) or []
            yield from rows
            offset += len(rows)
            if not rows or offset >= body.get("total_count", 0):
                return

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._present: set[str] = set()
        since = self._marks.since("issues")
        wanted = set(self.config.get("projects") or [])
        projects = {p["id"]: p for p in self._list("/projects.json", "projects")
                    if not wanted or p.get("identifier") in wanted}
        for project in projects.values():
            self._present.add(f"project:{project['id']}")
            parent = project.get("parent") or {}
            yield RedmineProjectEntity(
                entity_id=f"project:{project['id']}", name=project["name"],
                description=project.get("description") or "",
                breadcrumbs=[Breadcrumb(f"project:{parent['id']}", parent.get("name", ""), "RedmineProjectEntity")]
                if parent.get("id") else [],
                web_url=f"{self.base_url}/projects/{project.get('identifier')}",
                created_at=parse_time(project.get("created_on")), updated_at=parse_time(project.get("updated_on")))
        scopes = [{"project_id": p["identifier"]} for p in projects.values()] if wanted else [{}]
        for scope in scopes:
            for issue in self._list("/issues.json", "issues", {"status_id": "*", "sort": "id", **scope}):
                if f"issue:{issue['id']}" in self._present:
                    continue  # a subproject's issue also listed with its parent project
                self._present.add(f"issue:{issue['id']}")
                self._marks.advance("issues", issue.get("updated_on"))
                if since and (issue.get("updated_on") or "") <= since:
                    continue
                entity = self._issue(issue, projects.get((issue.get("project") or {}).get("id")))
                if entity is not None:
                    yield entity

    def _issue(self, issue: dict, project: dict | None) -> RedmineIssueEntity | None:
        try:
            full = self.http.get_json(f"/issues/{issue['id']}.json", params={"include": "journals"})["issue"]
        except HttpError as exc:
            if exc.status in (403, 404):  # deleted or made private between the listing and this read
                self._present.discard(f"issue:{issue['id']}")
                return None
            raise
        notes = [f"{(j.get('user') or {}).get('name', '')}: {j['notes']}" for j in full.get("journals") or []
                 if (j.get("notes") or "").strip()]
        name = lambda key: (full.get(key) or {}).get("name") or ""  # noqa: E731
        crumbs = [Breadcrumb(f"project:{project['id']}", project["name"], "RedmineProjectEntity")] if project else []
        return RedmineIssueEntity(
            entity_id=f"issue:{full['id']}", name=f"#{full['id']} {full.get('subject', '')}".strip(),
            tracker=name("tracker"), status=name("status"), priority=name("priority"), assignee=name("assigned_to"),
            description=full.get("description") or "", notes=notes, breadcrumbs=crumbs,
            web_url=f"{self.base_url}/issues/{full['id']}", created_at=parse_time(full.get("created_on")),
            updated_at=parse_time(full.get("updated_on")),
            raw_source_fields={"project": (full.get("project") or {}).get("name"), "tracker": name("tracker"),
                               "status": name("status"), "priority": name("priority"), "author": name("author"),
                               "assignee": name("assigned_to"), "closed_on": full.get("closed_on")})

    def is_full_listing(self) -> bool:
        return not self._marks.incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return self._marks.cursor()
