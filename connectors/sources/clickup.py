"""ClickUp: the tasks of one's Workspaces (teams → spaces → folders → lists), with their comments.

Config: `team_ids` (default: every Workspace the token sees), `include_closed` (default true). Auth: a personal API token (`pk_...`, direct) or OAuth (ClickUp
tokens do not expire: `access_only`); both go as the bare `Authorization` header ClickUp asks for.

API (`https://api.clickup.com/api/v2`): `GET /team`, `GET /team/{id}/space` (space names for the
breadcrumbs), then the Workspace's tasks `GET /team/{id}/task?page=N&order_by=updated&subtasks=true`
(100 a page; `last_page` ends it) with `date_updated_gt=<ms>` on incremental runs; each task's
folder and list come with it. Comments: `GET /task/{id}/comment` (25 a page, newest first; the
next page starts at the oldest one's `start`/`start_id`), indexed inside their task's entity
(ClickUp does not document whether a new comment moves `date_updated`; a comment on an otherwise
unchanged task may wait for the task's next change or a forced full sync).
ClickUp reports no deletions, so an incremental run also pages through the Workspace's task
list without fetching comments (one request per 100 tasks) and gives those ids to the pipeline
as `present_entity_ids()`: known tasks absent from it (deleted, archived) are deleted.

Budget: 100 requests a minute per token (ClickUp answers 429 with `X-RateLimit-Reset`).
Entities: ClickUpTaskEntity (`task:{id}`; breadcrumbs: Workspace, space, folder, list).
Cursor: `{"since": {team id: <newest date_updated, epoch ms>}}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, compact, items, parse_time

TASK_PAGE = 100
COMMENT_PAGE = 25


@dataclass
class ClickUpComment:
    """A comment on a task."""

    author: str
    date: str
    text: str


@dataclass
class ClickUpTaskEntity(BaseEntity):
    """A task (or a subtask) with its comments."""

    status: str = ""
    priority: str = ""
    assignees: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    due: str = ""
    description: str = ""
    comments: list[ClickUpComment] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = [("Status", self.status), ("Priority", self.priority), ("Assignees", ", ".join(self.assignees)),
                 ("Tags", ", ".join(self.tags)), ("Due", self.due)]
        head = f"# Task: {self.name}\n\n" + "\n".join(f"{k}: {v}" for k, v in facts if v)
        parts = [head, self.description] + [f"## {c.author}, {c.date}\n\n{c.text}" for c in self.comments]
        return "\n\n".join(p for p in parts if p).strip()


@source(
    name="ClickUp",
    short_name="clickup",
    description="Tasks of ClickUp Workspaces with their comments.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("api_token", "Personal API token", "string",
                             "Settings → Apps → API Token (starts with pk_).", required=True, is_secret=True),),
    config_fields=(
        ConfigField("team_ids", "Workspaces", "array", "Ids of the Workspaces (teams) to index (default: all).",
                    items_type="string"),
        ConfigField("include_closed", "Include closed tasks", "boolean",
                    "Index tasks in a closed status too.", default=True),
    ),
    labels=("Project Management",),
    entity_types=(ClickUpTaskEntity,),
    rate_limit_level="connection",
    rate_limit="100/minute",
    base_url="https://api.clickup.com/api/v2",
)
class ClickUpSource(WatermarkSource, BaseSource):
    """Lists tasks by Workspace; see the module docstring."""

    def http_auth(self):
        token = self.credentials.get("api_token") or self.credentials.get("access_token")
        return HeaderAuth({"Authorization": token}) if token else super().http_auth()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._present: set[str] | None = set() if self._marks.incremental else None
        wanted = set(self.config.get("team_ids") or [])
        for team in self.http.get_json("/team").get("teams") or []:
            if wanted and str(team["id"]) not in wanted:
                continue
            spaces = {str(s["id"]): s.get("name") or str(s["id"]) for s in
                      self.http.get_json(f"/team/{team['id']}/space", params={"archived": "false"}).get("spaces") or []}
            yield from self._tasks(team, spaces)

    def present_entity_ids(self):
        return self._present

    def _tasks(self, team: dict, spaces: dict) -> Iterator[ClickUpTaskEntity]:
        team_id = str(team["id"])
        since = self._marks.since(team_id)
        for task in self._team_tasks(team_id, since):
            self._marks.advance(team_id, int(task.get("date_updated") or 0) or None)
            try:
                comments = self._comments(task["id"])
            except HttpError as exc:
                if exc.status == 404:
                    continue
                raise
            yield self._task(task, team, spaces, comments)
        if self._present is not None:  # only the changed tasks were listed: list every id to find the deleted
            self._present.update(f"task:{t['id']}" for t in self._team_tasks(team_id, None))

    def _team_tasks(self, team_id: str, since: int | None) -> Iterator[dict]:
        def fetch(page):
            params = {"page": page or 0, "order_by": "updated", "reverse": "true", "subtasks": "true",
                      "include_closed": str(self.config.get("include_closed", True)).lower()}
            if since:
                params["date_updated_gt"] = since
            body = self.http.get_json(f"/team/{team_id}/task", params=params)
            tasks = body.get("tasks") or []
            last = body.get("last_page", len(tasks) < TASK_PAGE)
            return tasks, None if last or not tasks else (page or 0) + 1

        return items(fetch)

    def _comments(self, task_id: str) -> list[ClickUpComment]:
        def fetch(start):
            params = {"start": start[0], "start_id": start[1]} if start else None
            page = self.http.get_json(f"/task/{task_id}/comment", params=params).get("comments") or []
            oldest = page[-1] if page else None
            return page, (oldest["date"], oldest["id"]) if oldest and len(page) >= COMMENT_PAGE else None

        out = []
        for c in items(fetch):
            text = c.get("comment_text") or "".join(part.get("text", "") for part in c.get("comment") or [])
            if text.strip():
                when = parse_time(c.get("date"))
                out.append(ClickUpComment(author=(c.get("user") or {}).get("username") or "someone",
                                          date=when.strftime("%Y-%m-%d %H:%M UTC") if when else "", text=text.strip()))
        return list(reversed(out))  # oldest first

    def _task(self, task: dict, team: dict, spaces: dict, comments: list[ClickUpComment]) -> ClickUpTaskEntity:
        space_id = str((task.get("space") or {}).get("id") or "")
        folder, lst = task.get("folder") or {}, task.get("list") or {}
        breadcrumbs = [Breadcrumb(f"team:{team['id']}", team.get("name") or str(team["id"]), "ClickUpWorkspace")]
        if space_id:
            breadcrumbs.append(Breadcrumb(f"space:{space_id}", spaces.get(space_id, space_id), "ClickUpSpace"))
        if folder.get("id") and not folder.get("hidden"):  # folderless lists sit in a hidden folder
            breadcrumbs.append(Breadcrumb(f"folder:{folder['id']}", folder.get("name") or folder["id"], "ClickUpFolder"))
        if lst.get("id"):
            breadcrumbs.append(Breadcrumb(f"list:{lst['id']}", lst.get("name") or lst["id"], "ClickUpList"))
        status = (task.get("status") or {}).get("status") or ""
        priority = (task.get("priority") or {}).get("priority") or ""
        assignees = [a.get("username") or a.get("email") or str(a.get("id")) for a in task.get("assignees") or []]
        tags = [t["name"] for t in task.get("tags") or [] if t.get("name")]
        due = parse_time(task.get("due_date"))
        return ClickUpTaskEntity(
            entity_id=f"task:{task['id']}", name=task.get("name") or task["id"], breadcrumbs=breadcrumbs,
            created_at=parse_time(task.get("date_created")), updated_at=parse_time(task.get("date_updated")),
            web_url=task.get("url") or f"https://app.clickup.com/t/{task['id']}", status=status, priority=priority,
            assignees=assignees, tags=tags, due=due.date().isoformat() if due else "",
            description=task.get("text_content") or task.get("description") or "", comments=comments,
            raw_source_fields=compact({"task_id": task["id"], "custom_id": task.get("custom_id"), "status": status,
                                       "priority": priority, "assignees": assignees, "tags": tags,
                                       "list": lst.get("name"), "space_id": space_id,
                                       "parent": task.get("parent"), "due_date": due.isoformat() if due else None}))
