"""Asana: the projects and tasks of one's workspaces, with each task's comments.

Config: `workspace_gids` (default: every workspace the token sees), `include_archived_projects`
(default false). Auth: a personal access token (direct) or OAuth (access tokens live an hour;
the refresh token does not rotate: `with_refresh`).

API (`https://app.asana.com/api/1.0`, offset pagination: `limit=100`, then the answer's
`next_page.offset` until `next_page` is null): `GET /workspaces`, `GET /projects?workspace=`,
`GET /tasks?project=&modified_since=` and `GET /tasks/{gid}/stories` (comments are the stories
of subtype `comment_added`). Asana counts a new story as a modification of its task, so the
comments are indexed inside their task's entity and re-read for the tasks an incremental run
returns. Asana reports no deletions to `modified_since`: an incremental run also lists each
project's task ids (`opt_fields=gid`, one request per 100 tasks) and gives them, with every
project listed, to the pipeline as `present_entity_ids()`: known tasks and projects absent from
it (deleted, archived, in a project that is gone) are deleted.

Budget: 150 requests a minute on the free tier (Asana answers 429 with `Retry-After`).
Entities: AsanaProjectEntity (`project:{gid}`; breadcrumb: workspace), AsanaTaskEntity
(`task:{gid}`; breadcrumbs: workspace, project, section). Cursor: `{"since": {project gid:
"<newest modified_at>"}}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.notifications.vendors import AsanaNotifications
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, compact, html_text, items, parse_time

PAGE = 100
TASK_FIELDS = ("name,notes,html_notes,completed,completed_at,assignee.name,due_on,created_at,modified_at,"
               "permalink_url,tags.name,memberships.project.gid,memberships.section.name,resource_subtype,"
               "num_likes,parent.name")
PROJECT_FIELDS = "name,notes,archived,created_at,modified_at,permalink_url,team.name,owner.name,current_status.title"


@dataclass
class AsanaComment:
    """A comment on a task (a story of subtype comment_added)."""

    author: str
    created_at: str
    text: str


@dataclass
class AsanaProjectEntity(BaseEntity):
    """A project."""

    notes: str = ""
    team: str = ""

    def textual_representation(self) -> str:
        team = f"\nTeam: {self.team}" if self.team else ""
        return f"# Project: {self.name}{team}\n\n{self.notes}".strip()


@dataclass
class AsanaTaskEntity(BaseEntity):
    """A task (or a milestone, an approval) with its comments."""

    project: str = ""
    section: str = ""
    assignee: str = ""
    completed: bool = False
    due_on: str = ""
    tags: list[str] = field(default_factory=list)
    notes: str = ""
    comments: list[AsanaComment] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = [("Project", self.project), ("Section", self.section), ("Assignee", self.assignee),
                 ("Due", self.due_on), ("Status", "completed" if self.completed else "open"),
                 ("Tags", ", ".join(self.tags))]
        head = f"# Task: {self.name}\n\n" + "\n".join(f"{k}: {v}" for k, v in facts if v)
        parts = [head, self.notes] + [f"## {c.author}, {c.created_at}\n\n{c.text}" for c in self.comments]
        return "\n\n".join(p for p in parts if p).strip()


@source(
    name="Asana",
    short_name="asana",
    notifications=AsanaNotifications,
    description="Projects and tasks of Asana workspaces, with the tasks' comments.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(ConfigField("personal_access_token", "Personal access token", "string",
                             "A personal access token (My settings → Apps → Developer apps).",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("workspace_gids", "Workspaces", "array", "Gids of the workspaces to index (default: all).",
                    items_type="string"),
        ConfigField("include_archived_projects", "Include archived projects", "boolean",
                    "Index the tasks of archived projects too.", default=False),
    ),
    labels=("Project Management",),
    entity_types=(AsanaProjectEntity, AsanaTaskEntity),
    rate_limit_level="connection",
    rate_limit="150/minute",
    base_url="https://app.asana.com/api/1.0",
)
class AsanaSource(WatermarkSource, BaseSource):
    """Lists projects and tasks; see the module docstring."""

    def http_auth(self):
        token = self.credentials.get("personal_access_token")
        return BearerAuth(token) if token else super().http_auth()

    def _pages(self, path: str, params: dict) -> Iterator[dict]:
        def fetch(offset):
            query = {**params, "limit": PAGE}
            if offset:
                query["offset"] = offset
            body = self.http.get_json(path, params=query)
            return body.get("data") or [], (body.get("next_page") or {}).get("offset")

        return items(fetch)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        # An incremental run collects what still exists (every project, every task id) for the pipeline.
        self._present: set[str] | None = set() if self._marks.incremental else None
        wanted = set(self.config.get("workspace_gids") or [])
        projects = []
        for workspace in self._pages("/workspaces", {}):
            if wanted and workspace["gid"] not in wanted:
                continue
            ws = Breadcrumb(workspace["gid"], workspace.get("name") or workspace["gid"], "AsanaWorkspace")
            params = {"workspace": workspace["gid"], "opt_fields": PROJECT_FIELDS}
            if not self.config.get("include_archived_projects"):
                params["archived"] = "false"
            for project in list(self._pages("/projects", params)):
                projects.append(project["gid"])
                yield self._project(project, ws)
                yield from self._tasks(project, ws)
        # Marks of projects no longer listed (deleted, archived, left out) are dropped with them.
        self._marks.marks = {gid: mark for gid, mark in self._marks.marks.items() if gid in projects}

    def present_entity_ids(self):
        return self._present

    def _tasks(self, project: dict, ws: Breadcrumb) -> Iterator[AsanaTaskEntity]:
        gid = project["gid"]
        since = self._marks.since(gid)
        params = {"project": gid, "opt_fields": TASK_FIELDS}
        if since:
            params["modified_since"] = since
        crumbs = [ws, Breadcrumb(f"project:{gid}", project.get("name") or gid, "AsanaProjectEntity")]
        if self._present is not None:
            self._present.add(f"project:{gid}")
        for task in self._pages("/tasks", params):
            self._marks.advance(gid, task.get("modified_at"))
            try:
                comments = self._comments(task["gid"])
            except HttpError as exc:
                if exc.status == 404:  # deleted since the listing
                    continue
                raise
            yield self._task(task, project, crumbs, comments)
        if since:  # only the changed tasks were listed: the ids of all of them tell what was deleted
            self._present.update(f"task:{t['gid']}" for t in self._pages("/tasks", {"project": gid, "opt_fields": "gid"}))

    def _comments(self, task_gid: str) -> list[AsanaComment]:
        stories = self._pages(f"/tasks/{task_gid}/stories",
                              {"opt_fields": "created_at,created_by.name,resource_subtype,text"})
        return [AsanaComment(author=(s.get("created_by") or {}).get("name") or "someone",
                             created_at=s.get("created_at") or "", text=s.get("text") or "")
                for s in stories if s.get("resource_subtype") == "comment_added" and s.get("text")]

    def _project(self, project: dict, ws: Breadcrumb) -> AsanaProjectEntity:
        team = (project.get("team") or {}).get("name") or ""
        return AsanaProjectEntity(
            entity_id=f"project:{project['gid']}", name=project.get("name") or project["gid"], breadcrumbs=[ws],
            created_at=parse_time(project.get("created_at")), updated_at=parse_time(project.get("modified_at")),
            web_url=project.get("permalink_url") or f"https://app.asana.com/0/{project['gid']}/list",
            notes=project.get("notes") or "", team=team,
            raw_source_fields=compact({"project_gid": project["gid"], "workspace_gid": ws.entity_id, "team": team,
                                       "archived": project.get("archived"),
                                       "owner": (project.get("owner") or {}).get("name"),
                                       "status": (project.get("current_status") or {}).get("title")}))

    def _task(self, task: dict, project: dict, crumbs: list[Breadcrumb], comments: list[AsanaComment]) -> AsanaTaskEntity:
        section = next(((m.get("section") or {}).get("name") or "" for m in task.get("memberships") or []
                        if (m.get("project") or {}).get("gid") == project["gid"]), "")
        breadcrumbs = list(crumbs)
        if section:
            breadcrumbs.append(Breadcrumb(f"section:{project['gid']}:{section}", section, "AsanaSection"))
        assignee = (task.get("assignee") or {}).get("name") or ""
        tags = [t["name"] for t in task.get("tags") or [] if t.get("name")]
        notes = task.get("notes") or html_text(task.get("html_notes"))
        return AsanaTaskEntity(
            entity_id=f"task:{task['gid']}", name=task.get("name") or f"Task {task['gid']}", breadcrumbs=breadcrumbs,
            created_at=parse_time(task.get("created_at")), updated_at=parse_time(task.get("modified_at")),
            web_url=task.get("permalink_url") or f"https://app.asana.com/0/{project['gid']}/{task['gid']}",
            project=project.get("name") or "", section=section, assignee=assignee,
            completed=bool(task.get("completed")), due_on=task.get("due_on") or "", tags=tags, notes=notes,
            comments=comments,
            raw_source_fields=compact({"task_gid": task["gid"], "project_gid": project["gid"], "section": section,
                                       "assignee": assignee, "completed": task.get("completed"),
                                       "due_on": task.get("due_on"), "tags": tags,
                                       "subtype": task.get("resource_subtype"),
                                       "parent": (task.get("parent") or {}).get("name")}))
