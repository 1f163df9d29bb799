"""Todoist: projects, active tasks and their comments, through the Sync API.

Config: `include_comments` (default true). Auth: an API token (direct, Settings → Integrations →
Developer) or OAuth (Todoist tokens do not expire: `access_only`), as a bearer token.

API: `POST https://api.todoist.com/api/v1/sync` (the unified API v1, successor of Sync v9 with the
same protocol) with `sync_token=*` and `resource_types=["projects","sections","items","notes"]`
answers the whole account at once — there is no paging — and a `sync_token`; the next run sends
that token and gets only what changed since, each object with `is_deleted`. Deleted, archived
and completed (`checked`) tasks and projects are reported deleted on incremental runs (a full
sync lists active objects only, so they are absent from it). Project and section names live
in the cursor so that the breadcrumbs of a changed task are right when its project did not
change. Comments are entities of their own (`comment:{id}`, Todoist reports their deletion
too); the comments of a task deleted in the same run are deleted with it.

Budget: 1,000 requests per 15 minutes per user. Entities: TodoistProjectEntity
(`project:{id}`), TodoistTaskEntity (`task:{id}`; breadcrumbs: project, section, parent task),
TodoistCommentEntity (`comment:{id}`; breadcrumbs: project, task). Cursor:
`{"sync_token": "...", "names": {"project:<id>": name, "section:<id>": name, "task:<id>": content}}`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import compact, parse_time

RESOURCES = ["projects", "sections", "items", "notes"]
_PRIORITY = {4: "p1", 3: "p2", 2: "p3", 1: "p4"}  # the API's 4 is the app's p1 (urgent)


@dataclass
class TodoistProjectEntity(BaseEntity):
    """A project."""

    def textual_representation(self) -> str:
        return f"# Project: {self.name}"


@dataclass
class TodoistTaskEntity(BaseEntity):
    """An active task."""

    description: str = ""
    project: str = ""
    section: str = ""
    priority: str = ""
    due: str = ""
    labels: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = [("Project", self.project), ("Section", self.section), ("Priority", self.priority), ("Due", self.due),
                 ("Labels", ", ".join(self.labels))]
        head = f"# Task: {self.name}\n\n" + "\n".join(f"{k}: {v}" for k, v in facts if v)
        return f"{head}\n\n{self.description}".strip()


@dataclass
class TodoistCommentEntity(BaseEntity):
    """A comment on a task."""

    task: str = ""
    content: str = ""

    def textual_representation(self) -> str:
        return f"Comment on task \"{self.task}\":\n\n{self.content}".strip()


@source(
    name="Todoist",
    short_name="todoist",
    description="Projects, active tasks and comments of a Todoist account.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("api_token", "API token", "string", "Settings → Integrations → Developer → API token.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("include_comments", "Include comments", "boolean",
                                   "Index the comments of tasks.", default=True),),
    labels=("Productivity",),
    entity_types=(TodoistProjectEntity, TodoistTaskEntity, TodoistCommentEntity),
    rate_limit_level="connection",
    rate_limit="1000/15minutes",
    base_url="https://api.todoist.com",
)
class TodoistSource(BaseSource):
    """Syncs a Todoist account with sync tokens; see the module docstring."""

    def http_auth(self):
        token = self.credentials.get("api_token")
        return BearerAuth(token) if token else super().http_auth()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        token = cursor.get("sync_token") or "*"
        self._incremental = token != "*"
        self._names: dict[str, str] = dict(cursor.get("names") or {}) if self._incremental else {}
        self._deleted: list[str] = []
        body = self.http.post("/api/v1/sync", data={"sync_token": token, "resource_types": json.dumps(RESOURCES)},
                              idempotent=True).json()
        if body.get("full_sync"):
            self._incremental = False  # Todoist may answer a full sync to an old token
        self._token = body.get("sync_token") or token

        for p in body.get("projects") or []:
            self._remember(f"project:{p['id']}", p.get("name"), gone=_gone(p))
        for s in body.get("sections") or []:
            self._remember(f"section:{s['id']}", s.get("name"), gone=_gone(s))
        for t in body.get("items") or []:
            self._remember(f"task:{t['id']}", t.get("content"), gone=_gone(t) or t.get("checked"))

        for p in body.get("projects") or []:
            if not _gone(p):
                yield TodoistProjectEntity(
                    entity_id=f"project:{p['id']}", name=p.get("name") or p["id"],
                    created_at=parse_time(p.get("created_at")), updated_at=parse_time(p.get("updated_at")),
                    web_url=f"https://app.todoist.com/app/project/{p['id']}",
                    raw_source_fields=compact({"project_id": p["id"], "parent_id": p.get("parent_id"),
                                               "is_favorite": p.get("is_favorite"), "color": p.get("color")}))
        deleted_tasks = set()
        for t in body.get("items") or []:
            if _gone(t) or t.get("checked"):
                deleted_tasks.add(t["id"])
                continue
            yield self._task(t)
        if self.config.get("include_comments", True):
            for n in body.get("notes") or []:
                if _gone(n) or n.get("item_id") in deleted_tasks:
                    self._deleted.append(f"comment:{n['id']}")
                    continue
                if n.get("item_id"):  # project comments have no task
                    yield self._comment(n)

    def _remember(self, key: str, name: str | None, *, gone: bool) -> None:
        if gone:
            self._names.pop(key, None)
            self._deleted.append(key)
        elif name is not None:
            self._names[key] = name

    def _task(self, t: dict) -> TodoistTaskEntity:
        project = self._names.get(f"project:{t.get('project_id')}", "")
        section = self._names.get(f"section:{t.get('section_id')}", "") if t.get("section_id") else ""
        breadcrumbs = [Breadcrumb(f"project:{t['project_id']}", project or str(t["project_id"]), "TodoistProjectEntity")]
        if section:
            breadcrumbs.append(Breadcrumb(f"section:{t['section_id']}", section, "TodoistSection"))
        if t.get("parent_id"):
            breadcrumbs.append(Breadcrumb(f"task:{t['parent_id']}", self._names.get(f"task:{t['parent_id']}", ""),
                                          "TodoistTaskEntity"))
        due = (t.get("due") or {}).get("date") or ""
        labels = list(t.get("labels") or [])
        priority = _PRIORITY.get(t.get("priority"), "")
        return TodoistTaskEntity(
            entity_id=f"task:{t['id']}", name=t.get("content") or t["id"], breadcrumbs=breadcrumbs,
            created_at=parse_time(t.get("added_at")), updated_at=parse_time(t.get("updated_at")),
            web_url=f"https://app.todoist.com/app/task/{t['id']}", description=t.get("description") or "",
            project=project, section=section, priority=priority, due=due, labels=labels,
            raw_source_fields=compact({"task_id": t["id"], "project_id": t.get("project_id"),
                                       "section_id": t.get("section_id"), "priority": priority, "due": due,
                                       "labels": labels, "responsible_uid": t.get("responsible_uid")}))

    def _comment(self, n: dict) -> TodoistCommentEntity:
        task = self._names.get(f"task:{n['item_id']}", "")
        project_id = n.get("project_id")
        breadcrumbs = []
        if project_id:
            breadcrumbs.append(Breadcrumb(f"project:{project_id}", self._names.get(f"project:{project_id}", ""),
                                          "TodoistProjectEntity"))
        breadcrumbs.append(Breadcrumb(f"task:{n['item_id']}", task, "TodoistTaskEntity"))
        content = n.get("content") or ""
        attachment = n.get("file_attachment") or {}
        if attachment.get("file_name"):
            content += f"\n\nAttachment: {attachment['file_name']}"
        return TodoistCommentEntity(
            entity_id=f"comment:{n['id']}", name=f"Comment on {task}" if task else f"Comment {n['id']}",
            breadcrumbs=breadcrumbs, created_at=parse_time(n.get("posted_at")),
            web_url=f"https://app.todoist.com/app/task/{n['item_id']}", task=task, content=content,
            raw_source_fields=compact({"comment_id": n["id"], "task_id": n["item_id"], "posted_uid": n.get("posted_uid")}))

    def is_full_listing(self) -> bool:
        return not self._incremental

    def deleted_entity_ids(self):
        return self._deleted

    def next_cursor(self) -> dict:
        return {"sync_token": self._token, "names": self._names}


def _gone(obj: dict) -> bool:
    return bool(obj.get("is_deleted") or obj.get("is_archived"))
