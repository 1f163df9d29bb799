"""GitLab: projects, issues, merge requests, their comments (notes) and repository files.

Config: `gitlab_url` (default https://gitlab.com; a self-hosted instance is allowed and is
SSRF-guarded: private addresses answer 422 unless the deployment opens them with
`AIRWEAVE_ALLOWED_PRIVATE_NETWORKS`), `projects` ("group/subgroup/project" paths),
`include_merge_requests`, `include_notes`, `include_files` (default true) and `max_files`
(per project, default 1,000). Auth: a personal / project / group access token (direct, `private_token`,
sent as `PRIVATE-TOKEN`), or OAuth on gitlab.com (GitLab rotates refresh tokens: `with_rotating_refresh`).

API (REST v4, offset pages of 100 with `Link` headers):
- `GET /projects/:path` (a 404 is a config_error naming the project);
- `GET /projects/:id/issues` and `/merge_requests` with `scope=all`, `order_by=updated_at`,
  `sort=asc`, and `updated_after` on incremental runs;
- `GET /projects/:id/{issues|merge_requests}/:iid/notes` (system notes left out);
- files of the default branch: `GET /projects/:id/repository/tree?recursive=true` on a full run,
  `GET /projects/:id/repository/compare?from=<last head>&to=<branch>` on an incremental one
  (changed, added, renamed and deleted paths), each file read with
  `GET /projects/:id/repository/files/:path/raw?ref=` through `self.http.download` (limited by
  AIRWEAVE_MAX_FILE_BYTES) and converted by the file converters; only the types they read.

Entities: GitLabProjectEntity ("<path>"), GitLabIssueEntity ("<path>#<iid>"),
GitLabMergeRequestEntity ("<path>!<iid>"), GitLabNoteEntity ("<path>#<iid>/note/<id>" or
"<path>!<iid>/note/<id>"), GitLabFileEntity ("<path>:<file path>"). Breadcrumbs: the group
namespace, the project, then the issue or merge request, or the file's folders.

Access (`supports_access_control`): what a project shows, and to whom, follows its `visibility`
and its features' access levels (`GET /projects/:path`). A public or internal project (internal:
every signed-in user of the instance) is open to the organization, except a feature set to
"Only project members" (`issues_access_level`, `merge_requests_access_level`,
`repository_access_level` = `private`). Members-only items carry `group:project:<path>` (every
member, Guest and up) or, for what Guests cannot read (merge requests, repository files,
confidential issues and their comments), `group:project:<path>:reporter` (Reporter and up,
`access_level` >= 20). Members come from `GET /projects/:id/members/all` (direct, inherited from
parent groups, and through groups the project is shared with), listed at each sync; a member's
address is the listed `email` (shown to administrators and for enterprise users), else the
`public_email` of `GET /users/:id`; members without either, and members not `active`, are left out.

Incremental: the cursor holds per project the newest `updated_at` seen, the head commit whose
files are indexed, and the iids (with note ids) of issues and merge requests. GitLab reports no
deletions, so an incremental run also lists the iids still present and reports the rest, and
the notes gone from a changed issue or merge request.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import quote, urlsplit

from connectors.auth.tokens import HeaderAuth
from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, FileEntity, SkipEntity, SourceError
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.http import BlockedAddress, HttpError
from connectors.http.ssrf import check_url
from connectors.notifications.vendors import GitLabNotifications
from connectors.registry import source
from connectors.sources._saas import parse_time


def _enc(value: str) -> str:
    return quote(value, safe="")


@dataclass
class GitLabProjectEntity(BaseEntity):
    """A project: its name, description and default branch."""

    description: str = ""
    default_branch: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nGitLab project {self.entity_id}\n\n{self.description}".strip()


@dataclass
class GitLabIssueEntity(BaseEntity):
    """An issue: state, labels, people and description (Markdown)."""

    project: str = ""
    iid: int = 0
    state: str = ""
    author: str = ""
    labels: list[str] = field(default_factory=list)
    description: str = ""
    kind: str = "Issue"

    volatile_fields = ("updated_at",)  # new notes move updated_at; the notes are entities of their own

    def textual_representation(self) -> str:
        labels = f"; labels: {', '.join(self.labels)}" if self.labels else ""
        sign = "!" if self.kind == "Merge request" else "#"
        return (f"# {self.name}\n\n{self.kind} {sign}{self.iid} in {self.project} by {self.author}, "
                f"{self.state}{labels}\n\n{self.description}").strip()


@dataclass
class GitLabMergeRequestEntity(GitLabIssueEntity):
    """A merge request: also its source and target branches."""

    source_branch: str = ""
    target_branch: str = ""
    kind: str = "Merge request"


@dataclass
class GitLabNoteEntity(BaseEntity):
    """A comment (note) on an issue or a merge request."""

    author: str = ""
    body: str = ""

    def textual_representation(self) -> str:
        return f"Comment by {self.author}: {self.name}\n\n{self.body}".strip()


@dataclass
class GitLabFileEntity(FileEntity):
    """A file of the default branch, converted to text by the file converters."""

    project: str = ""
    file_path: str = ""
    blob_id: str = ""


@source(
    name="GitLab",
    short_name="gitlab",
    notifications=GitLabNotifications,
    description="Projects, issues, merge requests, comments and repository files of GitLab.com or a self-hosted "
                "GitLab.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_rotating_refresh",
    auth_fields=(ConfigField("private_token", "Access token", "string", "A personal, project or group access token "
                             "with the read_api and read_repository scopes.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("gitlab_url", "GitLab URL", "string", "https://gitlab.com, or your self-hosted GitLab's URL.",
                    default="https://gitlab.com"),
        ConfigField("projects", "Projects", "array", "Full paths of the projects, e.g. gitlab-org/gitlab-runner.",
                    required=True, items_type="string"),
        ConfigField("include_merge_requests", "Include merge requests", "boolean", default=True),
        ConfigField("include_notes", "Include comments", "boolean", "Index the comments (notes) too.", default=True),
        ConfigField("include_files", "Include repository files", "boolean",
                    "Index the readable files of the default branch (Markdown, text, code, PDF, Office).",
                    default=True),
        ConfigField("max_files", "Max files per project", "integer", default=1000),
    ),
    labels=("Code", "Ticketing"),
    entity_types=(GitLabProjectEntity, GitLabIssueEntity, GitLabMergeRequestEntity, GitLabNoteEntity,
                  GitLabFileEntity),
    supports_access_control=True,
    mirrored_permissions=(("public and internal projects: open to the organization", True),
                          ("private projects: members, inherited and through shared groups", True),
                          ("features limited to project members (issues, merge requests, repository)", True),
                          ("Guest vs Reporter: code, merge requests and confidential issues need Reporter", True),
                          ("confidential issues' authors and assignees below Reporter", False),
                          ("members without a visible e-mail address", False),
                          ("external users kept out of internal projects (open to all here)", False)),
    rate_limit_level="connection",
    rate_limit="30/second",
)
class GitLabSource(BaseSource):
    """Lists the projects' issues, merge requests, notes and files; see the module docstring."""

    page_size = 100

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = (out.get("gitlab_url") or "https://gitlab.com").strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("config field 'gitlab_url' must be an http(s) URL, e.g. https://gitlab.example.com")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'gitlab_url': {exc}") from None
        out["gitlab_url"] = url
        projects = [p.strip().strip("/") for p in out["projects"]]
        bad = [p for p in projects if "/" not in p or " " in p]
        if not projects or bad:
            raise ValueError("config field 'projects' needs full project paths like group/project"
                             + (f"; not: {', '.join(bad)}" if bad else ""))
        out["projects"] = list(dict.fromkeys(projects))
        if not 1 <= out["max_files"] <= 100_000:
            raise ValueError("config field 'max_files' must be between 1 and 100000")
        return out

    @property
    def base_url(self) -> str:
        return self.config.get("gitlab_url", "https://gitlab.com") + "/api/v4"

    def http_auth(self):
        token = self.credentials.get("private_token")
        return HeaderAuth({"PRIVATE-TOKEN": token}) if token else super().http_auth()

    # --- access -------------------------------------------------------------------------------

    def _project_info(self, path: str) -> dict:
        """`GET /projects/:path` (cached per run). Raises SourceError (config_error) on 404."""
        cache = self.__dict__.setdefault("_projects", {})
        if path not in cache:
            try:
                cache[path] = self.http.get_json(f"/projects/{_enc(path)}")
            except HttpError as exc:
                if exc.status == 404:
                    raise SourceError(f"GitLab project '{path}' does not exist or this token cannot read it",
                                      "config_error") from None
                raise
        return cache[path]

    @staticmethod
    def _access(project: dict, path: str, feature: str | None, reporter: bool = False) -> dict:
        """Access of a project's item of `feature` (issues, merge_requests, repository; None: the project
        itself); `reporter` when Guests cannot read it. See the module docstring."""
        level = project.get(f"{feature}_access_level") if feature else None
        if project.get("visibility") in ("public", "internal") and level not in ("private", "disabled") \
                and not (feature == "issues" and reporter):
            return {"access_viewers": [], "access_is_public": True}
        group = f"group:project:{path}:reporter" if reporter else f"group:project:{path}"
        return {"access_viewers": [group], "access_is_public": False}

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Members of every project: `project:<path>` ∋ each member, `project:<path>:reporter` ∋ Reporter and up."""
        memberships = []
        for path in self.config["projects"]:
            project = self._project_info(path)
            for page in self.http.paginate(f"/projects/{project['id']}/members/all",
                                           params={"per_page": self.page_size}):
                for member in page.json():
                    email = self._email(member)
                    if not email or member.get("state", "active") != "active":
                        continue
                    memberships.append(AccessMembership(f"project:{path}", f"user:{email}"))
                    if (member.get("access_level") or 0) >= 20:
                        memberships.append(AccessMembership(f"project:{path}:reporter", f"user:{email}"))
        return memberships

    def _email(self, member: dict) -> str:
        emails = self.__dict__.setdefault("_emails", {})
        if member["id"] not in emails:
            email = member.get("email")
            if not email:
                email = self.http.get_json(f"/users/{member['id']}").get("public_email")
            emails[member["id"]] = (email or "").strip().lower()
        return emails[member["id"]]

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = (cursor or {}).get("projects") or {}
        self._incremental = bool(previous)
        self._state: dict[str, dict] = {}
        self._deleted: list[str] = []
        for path in self.config["projects"]:
            yield from self._project(path, previous.get(path) or {})

    def _project(self, path: str, before: dict) -> Iterator[BaseEntity]:
        project = self._project_info(path)
        since = before.get("updated_after")
        state = {"updated_after": since, "issues": dict(before.get("issues") or {}) if since else {},
                 "merge_requests": dict(before.get("merge_requests") or {}) if since else {},
                 "head": before.get("head")}
        self._state[path] = state
        namespace = project.get("namespace") or {}
        crumbs = [Breadcrumb(f"group:{namespace.get('full_path', '')}", namespace.get("name") or
                             namespace.get("full_path", ""), "GitLabGroup"),
                  Breadcrumb(path, project.get("name") or path, "GitLabProjectEntity")]
        yield GitLabProjectEntity(
            entity_id=path, name=project.get("name_with_namespace") or path, breadcrumbs=crumbs[:1],
            description=project.get("description") or "", default_branch=project.get("default_branch") or "",
            web_url=project.get("web_url") or "", created_at=parse_time(project.get("created_at")),
            raw_source_fields={"project_id": project["id"], "visibility": project.get("visibility"),
                               "default_branch": project.get("default_branch"), "topics": project.get("topics") or []},
            **self._access(project, path, None))
        kinds = [("issues", GitLabIssueEntity, "#")]
        if self.config.get("include_merge_requests", True):
            kinds.append(("merge_requests", GitLabMergeRequestEntity, "!"))
        for kind, cls, sign in kinds:
            yield from self._items(project, path, crumbs, kind, cls, sign, since, state, before.get(kind) or {})
        if self.config.get("include_files", True) and project.get("default_branch") and not project.get(
                "empty_repo"):
            yield from self._files(project, path, crumbs, state)

    def _items(self, project, path, crumbs, kind, cls, sign, since, state, before) -> Iterator[BaseEntity]:
        params = {"scope": "all", "order_by": "updated_at", "sort": "asc", "per_page": self.page_size}
        if since:
            params["updated_after"] = since
        listed = state[kind]
        for page in self.http.paginate(f"/projects/{project['id']}/{kind}", params=params):
            for item in page.json():
                updated = item.get("updated_at")
                if updated and (state["updated_after"] is None or parse_time(updated) > parse_time(state["updated_after"])):
                    state["updated_after"] = updated
                access = self._access(project, path, kind, reporter=kind == "merge_requests" or
                                      bool(item.get("confidential")))
                yield self._item(path, crumbs, cls, sign, item, access)
                notes = []
                if self.config.get("include_notes", True) and item.get("user_notes_count", 1):
                    for note in self._notes(project, path, crumbs, kind, sign, item, access):
                        notes.append(note.raw_source_fields["note_id"])
                        yield note
                key = str(item["iid"])
                self._deleted += [f"{path}{sign}{key}/note/{n}" for n in before.get(key, []) if n not in notes]
                listed[key] = notes
        if since:  # which issues / merge requests still exist
            alive = set()
            for page in self.http.paginate(f"/projects/{project['id']}/{kind}",
                                           params={"scope": "all", "per_page": self.page_size}):
                alive.update(str(item["iid"]) for item in page.json())
            for key in [k for k in listed if k not in alive]:
                self._deleted.append(f"{path}{sign}{key}")
                self._deleted += [f"{path}{sign}{key}/note/{n}" for n in listed.pop(key)]

    def _item(self, path, crumbs, cls, sign, item, access: dict) -> GitLabIssueEntity:
        labels = list(item.get("labels") or [])
        author = (item.get("author") or {}).get("username", "")
        raw = {"iid": item["iid"], "state": item.get("state"), "labels": labels, "author": author,
               "assignees": [a.get("username") for a in item.get("assignees") or []],
               "milestone": (item.get("milestone") or {}).get("title"), "closed_at": item.get("closed_at")}
        extra = {}
        if cls is GitLabMergeRequestEntity:
            extra = {"source_branch": item.get("source_branch", ""), "target_branch": item.get("target_branch", "")}
            raw.update(extra, merged_at=item.get("merged_at"), draft=item.get("draft"))
        return cls(entity_id=f"{path}{sign}{item['iid']}", name=item.get("title") or "", breadcrumbs=crumbs,
                   created_at=parse_time(item.get("created_at")), updated_at=parse_time(item.get("updated_at")),
                   web_url=item.get("web_url") or "", project=path, iid=item["iid"], state=item.get("state") or "",
                   author=author, labels=labels, description=item.get("description") or "", raw_source_fields=raw,
                   **extra, **access)

    def _notes(self, project, path, crumbs, kind, sign, item, access: dict) -> Iterator[GitLabNoteEntity]:
        parent = Breadcrumb(f"{path}{sign}{item['iid']}", item.get("title") or "",
                            "GitLabMergeRequestEntity" if sign == "!" else "GitLabIssueEntity")
        url = f"/projects/{project['id']}/{kind}/{item['iid']}/notes"
        for page in self.http.paginate(url, params={"sort": "asc", "order_by": "created_at",
                                                    "per_page": self.page_size}):
            for note in page.json():
                if note.get("system"):
                    continue
                author = (note.get("author") or {}).get("username", "")
                yield GitLabNoteEntity(
                    entity_id=f"{path}{sign}{item['iid']}/note/{note['id']}",
                    name=f"{item.get('title', '')} (comment by {author})", breadcrumbs=crumbs + [parent],
                    created_at=parse_time(note.get("created_at")), updated_at=parse_time(note.get("updated_at")),
                    web_url=f"{item.get('web_url', '')}#note_{note['id']}", author=author,
                    body=note.get("body") or "", raw_source_fields={"note_id": note["id"], "author": author},
                    **access)

    # --- files --------------------------------------------------------------------------------

    def _files(self, project, path, crumbs, state) -> Iterator[BaseEntity]:
        branch = project["default_branch"]
        head = self.http.get_json(f"/projects/{project['id']}/repository/branches/{_enc(branch)}")["commit"]["id"]
        old = state["head"]
        state["head"] = head
        if self._incremental and old == head:
            return
        changed: list[tuple[str, str]] = []  # (file path, blob id or "")
        if self._incremental and old:
            compare = self.http.get_json(f"/projects/{project['id']}/repository/compare",
                                         params={"from": old, "to": head, "straight": "false"})
            for diff in compare.get("diffs") or []:
                if diff.get("deleted_file") or diff.get("renamed_file"):
                    self._deleted.append(f"{path}:{diff['old_path']}")
                if not diff.get("deleted_file"):
                    changed.append((diff["new_path"], ""))
        else:
            for page in self.http.paginate(f"/projects/{project['id']}/repository/tree",
                                           params={"ref": branch, "recursive": "true", "per_page": self.page_size}):
                changed += [(node["path"], node.get("id", "")) for node in page.json() if node.get("type") == "blob"]
        readable = [(p, b) for p, b in changed if posixpath.splitext(p)[1].lower() in SUPPORTED_EXTENSIONS]
        web = project.get("web_url", "")
        access = self._access(project, path, "repository", reporter=True)
        for file_path, blob in readable[: self.config.get("max_files", 1000)]:
            folders = file_path.split("/")[:-1]
            file_crumbs = crumbs + [Breadcrumb(f"{path}:{'/'.join(folders[:i + 1])}", folder, "GitLabFolder")
                                    for i, folder in enumerate(folders)]
            try:
                local = self.http.download(f"/projects/{project['id']}/repository/files/{_enc(file_path)}/raw",
                                           params={"ref": head}, suffix=posixpath.splitext(file_path)[1])
            except SkipEntity:
                continue  # over AIRWEAVE_MAX_FILE_BYTES
            except HttpError as exc:
                if exc.status == 404:  # removed between the listing and the read
                    continue
                raise
            yield GitLabFileEntity(
                entity_id=f"{path}:{file_path}", name=posixpath.basename(file_path), breadcrumbs=file_crumbs,
                web_url=f"{web}/-/blob/{branch}/{quote(file_path)}", path=local, size=local.stat().st_size,
                project=path, file_path=file_path, blob_id=blob,
                raw_source_fields={"file_path": file_path, "branch": branch,
                                   "extension": posixpath.splitext(file_path)[1].lower()}, **access)

    # --- cursor and deletions -----------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return not self._incremental

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"projects": self._state}
