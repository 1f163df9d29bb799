"""Linear: the teams, projects, issues and comments of a Linear workspace.

Auth: a personal API key (direct, `api_key`, sent as `Authorization: <key>` without a scheme, as
Linear asks), or OAuth 2 (browser flow, bring-your-own client, or an injected token; Linear
issues refresh tokens: `with_refresh`).

API: GraphQL at `https://api.linear.app/graphql` (every call a POST that only reads, so retried
like a GET). Connections are paged by `first` / `after` with `pageInfo { hasNextPage endCursor }`.
- `teams` (all, every run), `projects` and `issues` with `includeArchived: true` and, on
  incremental runs, `filter: {updatedAt: {gte: <cursor>}}`; an issue brings its first 50
  comments, and `issue(id).comments(after:)` the rest.
- Errors come as `{"errors": [{"message", "extensions": {"code"}}]}`, with HTTP 200 or 400:
  `AUTHENTICATION_ERROR` marks the connection `needs_reauth`; `RATELIMITED` waits for
  `X-RateLimit-Requests-Reset` (epoch milliseconds; capped like any Retry-After) and retries.
  HTTP 429 and 5xx are retried by the client.
Budget: 1,500 requests an hour per user for API keys (1,200 for OAuth apps), per connection.

Entities: LinearTeamEntity, LinearProjectEntity, LinearIssueEntity ("ENG-123: title";
breadcrumbs: team, project) and LinearCommentEntity (breadcrumbs: team, project, issue).
`entity_id` is Linear's UUID.

Access (`supports_access_control`): a public team's teams, projects, issues and comments are
open to the organization; a private team's are visible to its members only: they carry
`group:team:<team id>`, and `generate_access_memberships` lists each private team's members
(`team(id).members`, `user:<email>`) at every sync, so a membership change needs no re-indexing.
A project belongs to its teams: open when one of them is public, else visible to the members of
each. Guests (who see only the teams they belong to, public ones included) are not told apart
from members.

Incremental: cursor `{"updated_at": <newest updatedAt seen>, "teams": [ids], "comments":
{<issue id>: [comment ids]}}`. Archived or trashed issues and projects (`archivedAt` set) are
reported deleted; so are teams no longer listed and comments gone from a changed issue.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import cursor_pages
from connectors.notifications.vendors import LinearNotifications
from connectors.registry import source
from connectors.sources._graphql import GraphQLSource
from connectors.sources._saas import parse_time

API = "https://api.linear.app/graphql"

TEAMS = """query Teams($after: String) {
  teams(first: 50, after: $after) {
    nodes { id key name description private createdAt updatedAt }
    pageInfo { hasNextPage endCursor }
  }
}"""

TEAM_MEMBERS = """query TeamMembers($id: String!, $after: String) {
  team(id: $id) { members(first: 100, after: $after) { nodes { email } pageInfo { hasNextPage endCursor } } }
}"""

PROJECTS = """query Projects($after: String, $filter: ProjectFilter) {
  projects(first: 50, after: $after, filter: $filter, includeArchived: true) {
    nodes { id name description url state createdAt updatedAt archivedAt
            lead { name email } teams { nodes { id key name private } } }
    pageInfo { hasNextPage endCursor }
  }
}"""

_COMMENT = "id body url createdAt updatedAt user { name email }"

ISSUES = """query Issues($after: String, $filter: IssueFilter) {
  issues(first: 50, after: $after, filter: $filter, includeArchived: true, orderBy: updatedAt) {
    nodes {
      id identifier title description url priority priorityLabel estimate dueDate
      createdAt updatedAt archivedAt completedAt canceledAt
      state { name type } team { id key name private } project { id name }
      assignee { name email } creator { name email } labels { nodes { name } }
      comments(first: 50) { nodes { %s } pageInfo { hasNextPage endCursor } }
    }
    pageInfo { hasNextPage endCursor }
  }
}""" % _COMMENT

ISSUE_COMMENTS = """query IssueComments($id: String!, $after: String) {
  issue(id: $id) { comments(first: 50, after: $after) { nodes { %s } pageInfo { hasNextPage endCursor } } }
}""" % _COMMENT


def _page(connection: dict) -> tuple[list, str | None]:
    info = connection.get("pageInfo") or {}
    return connection.get("nodes") or [], info.get("endCursor") if info.get("hasNextPage") else None


@dataclass
class LinearTeamEntity(BaseEntity):
    """A team."""

    key: str = ""
    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nLinear team {self.key}\n\n{self.description}".strip()


@dataclass
class LinearProjectEntity(BaseEntity):
    """A project: its state, lead and description."""

    state: str = ""
    lead: str = ""
    description: str = ""

    def textual_representation(self) -> str:
        lead = f", led by {self.lead}" if self.lead else ""
        return f"# {self.name}\n\nLinear project, {self.state}{lead}\n\n{self.description}".strip()


@dataclass
class LinearIssueEntity(BaseEntity):
    """An issue: identifier, workflow state, priority, people, labels and description (Markdown)."""

    identifier: str = ""
    state: str = ""
    priority: str = ""
    assignee: str = ""
    labels: list[str] = field(default_factory=list)
    description: str = ""

    def textual_representation(self) -> str:
        meta = [f"Issue {self.identifier}", f"state: {self.state}"]
        if self.priority:
            meta.append(f"priority: {self.priority}")
        if self.assignee:
            meta.append(f"assignee: {self.assignee}")
        if self.labels:
            meta.append(f"labels: {', '.join(self.labels)}")
        return f"# {self.name}\n\n{'; '.join(meta)}\n\n{self.description}".strip()


@dataclass
class LinearCommentEntity(BaseEntity):
    """A comment on an issue (Markdown)."""

    issue_identifier: str = ""
    author: str = ""
    body: str = ""

    def textual_representation(self) -> str:
        return f"Comment by {self.author} on {self.issue_identifier}: {self.name}\n\n{self.body}".strip()


@source(
    name="Linear",
    short_name="linear",
    notifications=LinearNotifications,
    description="Teams, projects, issues and comments of a Linear workspace.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(ConfigField("api_key", "API key", "string", "A personal API key (Settings → Security & access).",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("include_comments", "Include comments", "boolean", "Index the comments too.", default=True),
    ),
    labels=("Project Management", "Ticketing"),
    entity_types=(LinearTeamEntity, LinearProjectEntity, LinearIssueEntity, LinearCommentEntity),
    supports_access_control=True,
    mirrored_permissions=(("public teams: open to the organization", True),
                          ("private teams: their members only", True),
                          ("guests limited to their teams (they see public teams here)", False)),
    rate_limit_level="connection",
    rate_limit="1200/hour",
    base_url="https://api.linear.app",
)
class LinearSource(GraphQLSource, BaseSource):
    """Reads the workspace over GraphQL; see the module docstring."""

    GRAPHQL_URL = API
    VENDOR = "Linear"

    def http_auth(self):
        key = self.credentials.get("api_key")
        return HeaderAuth({"Authorization": key}) if key else super().http_auth()

    def throttle_wait(self, response, body: dict) -> float:
        """Until `X-RateLimit-Requests-Reset` (epoch milliseconds), else a minute."""
        reset = response.headers.get("X-RateLimit-Requests-Reset")
        return max(0.0, int(reset) / 1000 - time.time()) if reset and reset.isdigit() else 60.0

    def _nodes(self, query: str, key: str, variables: dict) -> Iterator[dict]:
        def fetch(after):
            return _page(self.graphql(query, {**variables, "after": after})[key])

        for nodes in cursor_pages(fetch):
            yield from nodes

    # --- access -------------------------------------------------------------------------------

    def generate_access_memberships(self) -> list[AccessMembership]:
        """The members of every private team: `team:<team id>` ∋ `user:<email>` (lower-cased)."""
        memberships = []
        for team in self._nodes(TEAMS, "teams", {}):
            if not team.get("private"):
                continue

            def fetch(after, team_id=team["id"]):
                return _page(self.graphql(TEAM_MEMBERS, {"id": team_id, "after": after})["team"]["members"])

            for users in cursor_pages(fetch):
                memberships += [AccessMembership(f"team:{team['id']}", f"user:{u['email'].lower()}")
                                for u in users if u.get("email")]
        return memberships

    @staticmethod
    def _access(teams: list[dict]) -> dict:
        """Entity access of an item of `teams`: open when one is public, else their members (none: closed)."""
        if any(not t.get("private", True) for t in teams):
            return {"access_viewers": [], "access_is_public": True}
        return {"access_viewers": sorted(f"group:team:{t['id']}" for t in teams if t.get("id")),
                "access_is_public": False}

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        self._since = cursor.get("updated_at")
        self._newest = self._since
        self._deleted: list[str] = []
        previous_comments = cursor.get("comments") or {}
        self._comments: dict[str, list[str]] = dict(previous_comments) if self._since else {}
        changed = {"updatedAt": {"gte": self._since}} if self._since else None

        self._teams: dict[str, dict] = {}
        for team in self._nodes(TEAMS, "teams", {}):
            self._teams[team["id"]] = team
            yield LinearTeamEntity(
                entity_id=team["id"], name=team["name"], key=team.get("key", ""),
                description=team.get("description") or "", created_at=parse_time(team.get("createdAt")),
                updated_at=parse_time(team.get("updatedAt")), web_url=f"https://linear.app/team/{team.get('key', '')}",
                raw_source_fields={"key": team.get("key")}, **self._access([team]))
        self._deleted += [t for t in cursor.get("teams") or [] if t not in self._teams]

        self._projects: dict[str, dict] = {}
        for project in self._nodes(PROJECTS, "projects", {"filter": changed}):
            self._track(project)
            if project.get("archivedAt"):
                self._deleted.append(project["id"])
                continue
            self._projects[project["id"]] = project
            teams = (project.get("teams") or {}).get("nodes") or []
            crumbs = [Breadcrumb(t["id"], t["name"], "LinearTeamEntity") for t in teams[:1]]
            lead = (project.get("lead") or {}).get("name") or ""
            yield LinearProjectEntity(
                entity_id=project["id"], name=project["name"], breadcrumbs=crumbs, state=project.get("state") or "",
                lead=lead, description=project.get("description") or "", web_url=project.get("url") or "",
                created_at=parse_time(project.get("createdAt")), updated_at=parse_time(project.get("updatedAt")),
                raw_source_fields={"state": project.get("state"), "lead": lead,
                                   "team_keys": [t.get("key") for t in teams]}, **self._access(teams))

        for issue in self._nodes(ISSUES, "issues", {"filter": changed}):
            self._track(issue)
            if issue.get("archivedAt"):
                self._deleted.append(issue["id"])
                self._deleted += [f"{c}" for c in self._comments.pop(issue["id"], [])]
                continue
            yield from self._issue(issue, previous_comments.get(issue["id"], []))

    def _track(self, node: dict) -> None:
        updated = node.get("updatedAt")
        if updated and (self._newest is None or updated > self._newest):
            self._newest = updated

    def _issue(self, issue: dict, previous_comments: list[str]) -> Iterator[BaseEntity]:
        team, project = issue.get("team") or {}, issue.get("project") or {}
        crumbs = []
        if team:
            crumbs.append(Breadcrumb(team["id"], team.get("name", ""), "LinearTeamEntity"))
        if project:
            crumbs.append(Breadcrumb(project["id"], project.get("name", ""), "LinearProjectEntity"))
        labels = [label["name"] for label in (issue.get("labels") or {}).get("nodes") or []]
        state = issue.get("state") or {}
        access = self._access([team] if team else [])
        assignee = (issue.get("assignee") or {}).get("name") or ""
        name = f"{issue['identifier']}: {issue['title']}"
        yield LinearIssueEntity(
            entity_id=issue["id"], name=name, breadcrumbs=crumbs, identifier=issue["identifier"],
            state=state.get("name", ""), priority=issue.get("priorityLabel") or "", assignee=assignee, labels=labels,
            description=issue.get("description") or "", web_url=issue.get("url") or "",
            created_at=parse_time(issue.get("createdAt")), updated_at=parse_time(issue.get("updatedAt")),
            raw_source_fields={"identifier": issue["identifier"], "team_key": team.get("key"),
                               "project": project.get("name"), "state": state.get("name"),
                               "state_type": state.get("type"), "priority": issue.get("priority"),
                               "assignee": assignee, "creator": (issue.get("creator") or {}).get("name"),
                               "labels": labels, "estimate": issue.get("estimate"), "due_date": issue.get("dueDate"),
                               "completed_at": issue.get("completedAt")}, **access)
        if not self.config.get("include_comments", True):
            return
        seen = []
        issue_crumbs = crumbs + [Breadcrumb(issue["id"], name, "LinearIssueEntity")]
        for comment in self._issue_comments(issue):
            seen.append(comment["id"])
            author = (comment.get("user") or {}).get("name") or ""
            yield LinearCommentEntity(
                entity_id=comment["id"], name=f"{name} (comment by {author})", breadcrumbs=issue_crumbs,
                issue_identifier=issue["identifier"], author=author, body=comment.get("body") or "",
                web_url=comment.get("url") or "", created_at=parse_time(comment.get("createdAt")),
                updated_at=parse_time(comment.get("updatedAt")),
                raw_source_fields={"issue_identifier": issue["identifier"], "author": author}, **access)
        self._deleted += [c for c in previous_comments if c not in seen]
        self._comments[issue["id"]] = seen

    def _issue_comments(self, issue: dict) -> Iterator[dict]:
        first = issue.get("comments") or {}
        nodes, after = _page(first)
        yield from nodes
        if after:
            def fetch(position):
                return _page(self.graphql(ISSUE_COMMENTS, {"id": issue["id"], "after": position or after})
                             ["issue"]["comments"])

            for page in cursor_pages(fetch):
                yield from page

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._since

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"updated_at": self._newest, "teams": list(self._teams), "comments": self._comments}
