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

Access (`supports_access_control`): an issue is seen by who may browse its project, narrowed by its
issue security level when it has one (the `security` field); its comments follow it, narrowed again
by a comment's `visibility` (a group or a project role).
- browse: the project's permission scheme
  (`GET /rest/api/2/project/{id}/permissionscheme?expand=permissions,user,group,projectRole`), its
  `BROWSE_PROJECTS` (Server: `BROWSE`) grants. Holders: `user` -> `user:<email>`; `group` ->
  `group:<name>`; `projectRole` -> `group:role:<project id>:<role id>`; `reporter` / `assignee` ->
  that issue's reporter / assignee; `anyone` and `applicationRole` (anonymous or any user of the
  product) -> open to the organization. Others (project lead, user and group custom fields,
  Service Management customers) are not mirrored: they let nobody in here.
- security levels: `GET /rest/api/2/project/{id}/issuesecuritylevelscheme` (404: the project has
  none) and `GET /rest/api/2/issuesecurityschemes/{scheme id}/members` (paged by `startAt` /
  `isLast`), whose holders map as above. A level whose members cannot be read leaves its issues
  closed.
- groups, listed at each sync (`generate_access_memberships`): each project role's actors
  (`GET /rest/api/2/project/{id}/role`, then `.../role/{role id}`: user actors by e-mail, read with
  `GET /rest/api/2/user?accountId=` (Cloud) or `?username=` (Server); group actors as nested groups),
  and each group named by a grant, a level or a role
  (`GET /rest/api/2/group/member?groupname=`, paged by `startAt` / `isLast`).
Users are principals by e-mail: Cloud hides most addresses, and a person without a visible one is left
out. When a security level narrows a project, groups are expanded into the users listed in the same run
(`_atlassian.narrowed`). The permission scheme and the security levels need the Administer projects
permission; a refusal (403) fails the sync with a config_error rather than leaving issues half-mirrored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlsplit

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError, cursor_pages
from connectors.sources._atlassian import (
    AtlassianCommentEntity, AtlassianMixin, atlassian_source, clean_keys, minutes_since, narrowed, newer,
    user_principal, validate_site,
)
from connectors.sources._saas import parse_time

_PROJECT_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
ISSUE_FIELDS = ("summary", "description", "status", "priority", "issuetype", "project", "assignee", "reporter",
                "labels", "components", "created", "updated", "resolution", "parent", "comment", "security")
BROWSE = ("BROWSE_PROJECTS", "BROWSE")  # Cloud and recent Server; older Server
OPEN_HOLDERS = ("anyone", "applicationRole")


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


# What the Jira source mirrors of Jira's permissions (Jira Service Management adds to it).
JIRA_MIRRORED_PERMISSIONS = (
    ("Browse projects grants: users, groups and project roles (their actors, listed at each sync)", True),
    ("issue security levels: users, groups, project roles, reporter and assignee", True),
    ("reporter and assignee grants, from each issue's own reporter and assignee", True),
    ("comment visibility limited to a group or a project role", True),
    ("anyone (anonymous) and application access: open to the organization", True),
    ("users whose e-mail address the profile hides (left out)", False),
    ("project lead, user and group custom field and Service Management customer grants (nobody let in)", False),
)


@atlassian_source(
    name="Jira",
    short_name="jira",
    mirrored_permissions=JIRA_MIRRORED_PERMISSIONS,
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
    supports_access_control = True

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
        access = self._issue_levels(str(project.get("id", "")), fields)
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
            description=fields.get("description") or "", raw_source_fields=raw, **self._narrow(access))
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
                    **self._narrow(access + self._visibility(str(project.get("id", "")), comment)),
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

    # --- access -------------------------------------------------------------------------------

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Each project role's actors and each named group's members; see the module docstring.

        Raises SourceError (config_error) when Jira refuses to show a permission scheme or a role (403).
        """
        for project in self._projects():
            self._browse(project["id"])
            self._roles(project["id"])
            self._security(project["id"])
        members = self._members()
        return [AccessMembership(group, member) for group, listed in members.items() for member in listed]

    def _get(self, path: str, params: dict | None = None) -> dict | list:
        try:
            return self.http.get_json(f"{self.api_base()}{path}", params=params)
        except HttpError as exc:
            if exc.status == 403:
                raise SourceError(f"Jira refused {path} (403): mirroring access needs the Administer projects "
                                  f"permission", "config_error") from None
            raise

    def _projects(self) -> list[dict]:
        """The projects in scope (`GET /rest/api/2/project`, every project the account can see), read once."""
        if getattr(self, "_project_list", None) is None:
            wanted = set(self.config.get("projects") or [])
            self._project_list = [p for p in self._get("/rest/api/2/project") if not wanted or p["key"] in wanted]
        return self._project_list

    def _cache(self, name: str) -> dict:
        return self.__dict__.setdefault(name, {})

    def _holder(self, project_id: str, holder: dict) -> str | None:
        """A grant's holder as a principal, "open", "reporter", "assignee", or None (not mirrored)."""
        kind, parameter = holder.get("type"), holder.get("parameter") or ""
        if kind in OPEN_HOLDERS:
            return "open"
        if kind in ("reporter", "assignee"):
            return kind
        if kind == "group" and parameter:
            self._cache("_groups_named").setdefault(parameter, None)
            return f"group:{parameter}"
        if kind == "projectRole" and parameter:
            return f"group:role:{project_id}:{parameter}"
        if kind == "user":
            return self._user(holder.get("user") or {}, parameter)
        return None

    def _user(self, user: dict, ref: str = "") -> str | None:
        """`user:<email>` of a user object, reading the user (`GET /rest/api/2/user`) when it carries no address."""
        principal = user_principal(user)
        ref = ref or user.get("accountId") or user.get("name") or ""
        if principal or not ref:
            return principal
        cache = self._cache("_users")
        if ref not in cache:
            param = {"accountId": ref} if self.is_cloud else {"username": ref}
            try:
                cache[ref] = user_principal(self._get("/rest/api/2/user", param))
            except HttpError as exc:
                if exc.status != 404:
                    raise
                cache[ref] = None
        return cache[ref]

    def _browse(self, project_id: str) -> set[str] | None:
        """Who may browse a project: principals plus "reporter" / "assignee"; None when it is open."""
        cache = self._cache("_browsers")
        if project_id not in cache:
            scheme = self._get(f"/rest/api/2/project/{project_id}/permissionscheme",
                               {"expand": "permissions,user,group,projectRole"})
            out: set[str] | None = set()
            for grant in scheme.get("permissions") or []:
                if grant.get("permission") not in BROWSE:
                    continue
                principal = self._holder(project_id, grant.get("holder") or {})
                if principal == "open":
                    out = None
                    break
                if principal:
                    out.add(principal)
            cache[project_id] = out
        return cache[project_id]

    def _security(self, project_id: str) -> dict[str, set[str]]:
        """{security level id: principals (with "reporter" / "assignee")} of a project; {} without a scheme."""
        cache = self._cache("_levels")
        if project_id not in cache:
            levels: dict[str, set[str]] = {}
            try:
                scheme = self._get(f"/rest/api/2/project/{project_id}/issuesecuritylevelscheme")
            except HttpError as exc:
                if exc.status != 404:
                    raise
                scheme = {}
            if scheme.get("id") is not None:
                for level in scheme.get("levels") or []:
                    levels[str(level["id"])] = set()

                def fetch(start):
                    body = self._get(f"/rest/api/2/issuesecurityschemes/{scheme['id']}/members",
                                     {"startAt": start or 0, "maxResults": 50})
                    values = body.get("values") or []
                    following = body.get("startAt", 0) + len(values)
                    return values, None if body.get("isLast", True) or not values else following

                for page in cursor_pages(fetch):
                    for member in page:
                        principal = self._holder(project_id, member.get("holder") or {})
                        if principal and principal != "open":
                            levels.setdefault(str(member["issueSecurityLevelId"]), set()).add(principal)
            cache[project_id] = levels
        return cache[project_id]

    def _roles(self, project_id: str) -> dict[str, str]:
        """{role name: role id} of a project; each role's actors go to the memberships (read once)."""
        cache = self._cache("_role_ids")
        if project_id not in cache:
            roles = self._get(f"/rest/api/2/project/{project_id}/role")
            cache[project_id] = {name: url.rstrip("/").rsplit("/", 1)[-1] for name, url in roles.items()}
            members = self._cache("_role_members")
            for role_id in cache[project_id].values():
                role = self._get(f"/rest/api/2/project/{project_id}/role/{role_id}")
                listed = set()
                for actor in role.get("actors") or []:
                    if actor.get("type") == "atlassian-group-role-actor":
                        name = (actor.get("actorGroup") or {}).get("name") or actor.get("name")
                        if name:
                            self._cache("_groups_named").setdefault(name, None)
                            listed.add(f"group:{name}")
                    elif actor.get("type") == "atlassian-user-role-actor":
                        user = actor.get("actorUser") or {}
                        principal = self._user(user, user.get("accountId") or actor.get("name") or "")
                        if principal:
                            listed.add(principal)
                members[f"role:{project_id}:{role_id}"] = listed
        return cache[project_id]

    def _members(self) -> dict[str, set[str]]:
        """{group id: members} of every role and named group seen so far (groups' members read once each)."""
        members = dict(self._cache("_role_members"))
        named = self._cache("_groups_named")
        for name in list(named):
            if named[name] is None:
                listed: set[str] = set()

                def fetch(start, name=name):
                    body = self._get("/rest/api/2/group/member", {"groupname": name, "startAt": start or 0,
                                                                  "maxResults": 50, "includeInactiveUsers": "false"})
                    values = body.get("values") or []
                    following = body.get("startAt", 0) + len(values)
                    return values, None if body.get("isLast", True) or not values else following

                for page in cursor_pages(fetch):
                    listed |= {p for p in map(user_principal, page) if p}
                named[name] = listed
            members[name] = named[name]
        return members

    def _issue_levels(self, project_id: str, fields: dict) -> list[set[str]]:
        """The constraints on an issue: its project's browsers (unless open) and its security level."""
        def resolve(principals: set[str]) -> set[str]:
            out = {p for p in principals if p.startswith(("user:", "group:"))}
            for role in ("reporter", "assignee"):
                if role in principals:
                    who = self._user(fields.get(role) or {})
                    if who:
                        out.add(who)
            return out

        levels = []
        browsers = self._browse(project_id)
        if browsers is not None:
            levels.append(resolve(browsers))
        security = fields.get("security")
        if security:
            levels.append(resolve(self._security(project_id).get(str(security.get("id")), set())))
        return levels

    def _visibility(self, project_id: str, comment: dict) -> list[set[str]]:
        """A comment's own constraint: its `visibility` group (with its members, read now: the group may be
        named by no grant) or project role (by name; an unknown role lets nobody in), if any."""
        visibility = comment.get("visibility") or {}
        kind, name = visibility.get("type"), visibility.get("value")
        if kind == "group" and name:
            self._cache("_groups_named").setdefault(name, None)
            return [{f"group:{name}"} | self._members()[name]]
        if kind == "role" and name:
            role_id = self._roles(project_id).get(name)
            return [{f"group:role:{project_id}:{role_id}"}] if role_id else [set()]
        return []

    def _narrow(self, levels: list[set[str]]) -> dict:
        return narrowed(levels, self._members() if len(levels) > 1 else {})

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._since

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"updated": self._newest, "issues": self._issues}
