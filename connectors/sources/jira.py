"""Jira: the issues of a Jira site (Cloud, Server or Data Center), with their comments.

Config: `site_url` (the user's host: SSRF-guarded), `projects` (project keys; empty = every
project the account can browse), `include_comments` (default true). Auth: email + API token
(Cloud, basic auth), a personal access token alone (Server / Data Center, bearer), or OAuth 2.0
(3LO) through api.atlassian.com (see `_atlassian.py`).

API (REST v2, whose rich text is wiki markup, i.e. already text):
- issues: JQL search, `ORDER BY created ASC, key ASC` (a stable order while paging). Cloud
  (`*.atlassian.net`, or OAuth) uses `GET /rest/api/2/search/jql` paged by `nextPageToken` /
  `isLast` (the offset search is retired there); Server / Data Center use
  `GET /rest/api/2/search` paged by `startAt` / `maxResults` / `total`;
- comments: `GET /rest/api/2/issue/{id}/comment?startAt=&maxResults=`, for issues that have any
  (the search asks for the `comment` field and reads its `total`).

Entities: JiraIssueEntity (`entity_id` = the issue id, stable when an issue moves and its key
changes; name "KEY: summary"; breadcrumb: the project) and JiraCommentEntity
("<issue id>/comment/<comment id>"; breadcrumbs: project, issue).

Incremental: JQL `updated >= "-<n>m"` with n the minutes since the newest `updated` seen (plus
a margin). A relative date is used because JQL reads absolute dates in the account's own time
zone, which the connector cannot know. Jira reports no deletions, so an incremental run also
lists the ids of every issue in scope (`fields=id`, cheap) and reports the ids gone since the
last run; comments removed from a changed issue are reported too. Cursor:
`{"updated": <ISO time>, "issues": {<issue id>: [<comment id>, ...]}}`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlsplit

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError, cursor_pages
from connectors.sources._atlassian import (
    AtlassianCommentEntity, AtlassianMixin, atlassian_source, clean_keys, minutes_since, newer, validate_site,
)
from connectors.sources._saas import parse_time

_PROJECT_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
ISSUE_FIELDS = ("summary", "description", "status", "priority", "issuetype", "project", "assignee", "reporter",
                "labels", "components", "created", "updated", "resolution", "parent", "comment")


def _name(user: dict | None) -> str:
    return (user or {}).get("displayName") or (user or {}).get("name") or ""


@dataclass
class JiraIssueEntity(BaseEntity):
    """An issue: summary, description and its workflow fields."""

    key: str = ""
    project_key: str = ""
    issue_type: str = ""
    status: str = ""
    priority: str = ""
    assignee: str = ""
    reporter: str = ""
    labels: list[str] = field(default_factory=list)
    description: str = ""

    def textual_representation(self) -> str:
        meta = [f"{self.issue_type} {self.key} in {self.project_key}", f"status: {self.status}"]
        if self.priority:
            meta.append(f"priority: {self.priority}")
        if self.assignee:
            meta.append(f"assignee: {self.assignee}")
        if self.reporter:
            meta.append(f"reporter: {self.reporter}")
        if self.labels:
            meta.append(f"labels: {', '.join(self.labels)}")
        return f"# {self.name}\n\n{'; '.join(meta)}\n\n{self.description}".strip()


@dataclass
class JiraCommentEntity(AtlassianCommentEntity):
    """A comment on an issue."""

    issue_key: str = ""

    def commented_on(self) -> str:
        return self.issue_key


@atlassian_source(
    name="Jira",
    short_name="jira",
    mirrored_permissions=(("project roles and issue security levels: not mirrored yet, issues are visible to "
                           "the whole organization", False),),
    description="Issues of a Jira Cloud, Server or Data Center site, with their comments.",
    scope_field=ConfigField("projects", "Projects", "array", "Keys of the projects to index, e.g. ENG; empty for "
                            "every project the account can browse.", items_type="string", default=[]),
    labels=("Ticketing", "Project Management"),
    entity_types=(JiraIssueEntity, JiraCommentEntity),
)
class JiraSource(AtlassianMixin, BaseSource):
    """Lists issues and comments by JQL; see the module docstring."""

    PRODUCT = "jira"
    page_size = 100

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = validate_site(super().validate_config(config, for_api=for_api))
        out["projects"] = [p.upper() for p in out.get("projects") or []]
        return clean_keys(out, "projects", _PROJECT_KEY, "project keys like ENG or OPS_2")

    @property
    def is_cloud(self) -> bool:
        return self.uses_oauth or (urlsplit(self.config["site_url"]).hostname or "").endswith(".atlassian.net")

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        self._since = cursor.get("updated")
        self._previous: dict[str, list[str]] = cursor.get("issues") or {}
        self._issues: dict[str, list[str]] = {} if not self._since else {k: list(v) for k, v in self._previous.items()}
        self._newest = self._since
        self._deleted: list[str] = []
        api = self.api_base()
        scope = " AND ".join(self.scope_clauses())
        if self._since:
            changed = f'updated >= "-{minutes_since(self._since)}m"'
            jql = f"{scope} AND {changed}" if scope else changed
        else:
            jql = scope
        order = " ORDER BY created ASC, key ASC"
        for issue in self._search(api, (jql + order).strip(), ISSUE_FIELDS):
            yield from self._issue(api, issue)
        if self._since:  # which issues still exist
            alive = {issue["id"] for issue in self._search(api, (scope + order).strip(), ("id",))}
            for issue_id in list(self._issues):
                if issue_id not in alive:
                    self._deleted.append(issue_id)
                    self._deleted.extend(f"{issue_id}/comment/{c}" for c in self._issues.pop(issue_id))

    def scope_clauses(self) -> list[str]:
        """The JQL clauses naming what this connection indexes (the chosen projects; none = all)."""
        projects = self.config.get("projects")
        return [f"project in ({', '.join(projects)})"] if projects else []

    def _search(self, api: str, jql: str, fields: tuple[str, ...]) -> Iterator[dict]:
        size = self.page_size

        def fetch(position):
            params = {"jql": jql, "fields": ",".join(fields), "maxResults": size}
            if self.is_cloud:
                if position:
                    params["nextPageToken"] = position
                body = self.http.get_json(f"{api}/rest/api/2/search/jql", params=params)
                return body.get("issues") or [], None if body.get("isLast", True) else body.get("nextPageToken")
            params["startAt"] = position or 0
            body = self.http.get_json(f"{api}/rest/api/2/search", params=params)
            issues = body.get("issues") or []
            following = body.get("startAt", 0) + len(issues)
            return issues, following if issues and following < body.get("total", 0) else None

        try:
            for issues in cursor_pages(fetch):
                yield from issues
        except HttpError as exc:
            if exc.status == 400:  # JQL refused: typically a project key that does not exist or is not visible
                raise SourceError(f"Jira refused the search ({exc.body[:300]}); check the 'projects' keys",
                                  "config_error") from None
            raise

    def _issue(self, api: str, issue: dict) -> Iterator[BaseEntity]:
        fields = issue.get("fields") or {}
        project = fields.get("project") or {}
        site = self.config["site_url"]
        key, summary = issue["key"], fields.get("summary") or ""
        updated = fields.get("updated")
        self._newest = newer(self._newest, updated)
        project_crumb = Breadcrumb(project.get("id") or project.get("key", ""), project.get("name") or
                                   project.get("key", ""), "JiraProject")
        labels = list(fields.get("labels") or [])
        raw = {"key": key, "project_key": project.get("key"), "issue_type": (fields.get("issuetype") or {}).get("name"),
               "status": (fields.get("status") or {}).get("name"),
               "status_category": ((fields.get("status") or {}).get("statusCategory") or {}).get("key"),
               "priority": (fields.get("priority") or {}).get("name"), "labels": labels,
               "components": [c.get("name") for c in fields.get("components") or []],
               "assignee": _name(fields.get("assignee")), "reporter": _name(fields.get("reporter")),
               "resolution": (fields.get("resolution") or {}).get("name"),
               "parent_key": (fields.get("parent") or {}).get("key")}
        yield JiraIssueEntity(
            entity_id=issue["id"], name=f"{key}: {summary}", breadcrumbs=[project_crumb],
            created_at=parse_time(fields.get("created")), updated_at=parse_time(updated),
            web_url=f"{site}/browse/{key}", url=issue.get("self", ""), key=key, project_key=project.get("key", ""),
            issue_type=raw["issue_type"] or "", status=raw["status"] or "", priority=raw["priority"] or "",
            assignee=raw["assignee"], reporter=raw["reporter"], labels=labels,
            description=fields.get("description") or "", raw_source_fields=raw)
        if not self.config.get("include_comments", True):
            return
        embedded = fields.get("comment") or {}
        seen: list[str] = []
        if embedded.get("total", 1):  # absent (not asked, or an older server): read them to be sure
            crumbs = [project_crumb, Breadcrumb(issue["id"], f"{key}: {summary}", "JiraIssueEntity")]
            for comment in self._comments(api, issue, embedded):
                if str(comment["id"]) in seen:
                    continue
                seen.append(str(comment["id"]))
                author = _name(comment.get("author"))
                yield JiraCommentEntity(
                    entity_id=f"{issue['id']}/comment/{comment['id']}", name=f"{key}: {summary} (comment by {author})",
                    breadcrumbs=crumbs, created_at=parse_time(comment.get("created")),
                    updated_at=parse_time(comment.get("updated")),
                    web_url=f"{site}/browse/{key}?focusedCommentId={comment['id']}", url=comment.get("self", ""),
                    issue_key=key, author=author, body=comment.get("body") or "",
                    raw_source_fields={"issue_key": key, "author": author,
                                       **({"public": comment["jsdPublic"]} if "jsdPublic" in comment else {})})
        for old in self._previous.get(issue["id"], []):
            if old not in seen:
                self._deleted.append(f"{issue['id']}/comment/{old}")
        self._issues[issue["id"]] = seen

    def _comments(self, api: str, issue: dict, embedded: dict) -> Iterator[dict]:
        comments = embedded.get("comments")
        if comments is not None and len(comments) >= embedded.get("total", 0):
            yield from comments
            return

        def fetch(start):
            body = self.http.get_json(f"{api}/rest/api/2/issue/{issue['id']}/comment",
                                      params={"startAt": start or 0, "maxResults": self.page_size})
            page = body.get("comments") or []
            following = body.get("startAt", 0) + len(page)
            return page, following if page and following < body.get("total", 0) else None

        for page in cursor_pages(fetch):
            yield from page

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._since

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"updated": self._newest, "issues": self._issues}
