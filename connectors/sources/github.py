"""GitHub: the issues and pull requests of chosen repositories, with their comments.

The reference SaaS source of docs/connectors.md. Config: `repositories` ("owner/name", one
or more), `include_comments` (default true). Auth: a personal access token (direct,
`personal_access_token`), or OAuth (browser flow, bring-your-own client, or an injected
token; GitHub OAuth app tokens do not expire: `access_only`).

API (REST v3, `application/vnd.github+json`): `GET /repos/{repo}/issues?state=all&per_page=100`
(pull requests included, marked by a `pull_request` key), paginated by `Link` headers;
`since=<ISO time>` on incremental runs; each issue's `comments_url` when it has comments.
Budget: 5,000 requests an hour per token, so the rate limit is per connection; the HTTP
client waits on GitHub's `X-RateLimit-Reset` when a 403 says the budget is spent.

Federated mode (config `federated_search: true`, off by default): nothing is synced; each
search of the collection asks GitHub's issue search, `GET /search/issues?q=<query>
repo:<owner/name> ...` (at most 256 characters of query text, cut at a word; 30 searches a
minute per token), and the FederatedSearch operation merges the hits by reciprocal rank fusion.
A connection is never both: a synced issue would come back a second time as a federated hit.
A failing GitHub search raises, and the search goes on with partial results and the failure
named in the `federated_search_done` event.

Access (`supports_access_control`): a public repository's issues and comments are open to the
organization (so are an enterprise's `internal` ones: every member of the enterprise reads them).
A private repository's carry `group:repo:<owner/name>`, whose members are listed at each sync
(`generate_access_memberships`): every collaborator GitHub lists
(`GET /repos/{repo}/collaborators?affiliation=all`: outside collaborators, direct collaborators,
members through teams or the organization's base permission, owners) as `user:<email>`, and each
team with access (`GET /repos/{repo}/teams`) as the nested group `group:team:<org>/<slug>`, with
its members (`GET /orgs/{org}/teams/{slug}/members`) and its child teams
(`GET /orgs/{org}/teams/{slug}/teams`, nested again). GitHub shows a user's e-mail address only
when it is public (the collaborator's `email`, else `GET /users/{login}`): people without one
are left out, so their searches do not see the private repository. Listing collaborators needs
push access to the repository (and `read:org` for teams); a token without it fails the sync
with a config_error instead of leaving the repository's access half-mirrored. Federated hits
carry the same access.

Entities: GitHubIssueEntity (`entity_id` "owner/name#123"; breadcrumb: the repository) and
GitHubCommentEntity ("owner/name#123/comment/456"; breadcrumbs: repository, issue). Cursor:
`{"since": {"owner/name": "<newest updated_at seen>"}}`. A run with a cursor lists only what
changed, so it is not a full listing (GitHub reports no deletions; a forced full sync
removes deleted issues and comments).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.notifications.vendors import GitHubNotifications
from connectors.registry import source
from connectors.sources._saas import parse_time

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_QUERY_CHARS = 256  # GitHub's limit on a search query, qualifiers excluded
MAX_BODY_CHARS = 4000  # of an issue body in a federated result


@dataclass
class GitHubIssueEntity(BaseEntity):
    """An issue or a pull request."""

    repository: str = ""
    number: int = 0
    state: str = ""
    is_pull_request: bool = False
    author: str = ""
    labels: list[str] = field(default_factory=list)
    body: str = ""

    # New comments move updated_at without changing the issue's own text.
    volatile_fields = ("updated_at",)

    def textual_representation(self) -> str:
        kind = "Pull request" if self.is_pull_request else "Issue"
        labels = f"; labels: {', '.join(self.labels)}" if self.labels else ""
        return (f"# {self.name}\n\n{kind} #{self.number} in {self.repository} by {self.author}, "
                f"{self.state}{labels}\n\n{self.body}").strip()


@dataclass
class GitHubCommentEntity(BaseEntity):
    """A comment on an issue or a pull request."""

    repository: str = ""
    issue_number: int = 0
    author: str = ""
    body: str = ""

    def textual_representation(self) -> str:
        return f"Comment by {self.author} on {self.repository}#{self.issue_number}: {self.name}\n\n{self.body}".strip()


@source(
    name="GitHub",
    short_name="github",
    notifications=GitHubNotifications,
    description="Issues and pull requests of GitHub repositories, with their comments.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("personal_access_token", "Personal access token", "string",
                             "A fine-grained or classic token with read access to the repositories.",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("repositories", "Repositories", "array", "owner/name of each repository, e.g. octocat/Hello-World.",
                    required=True, items_type="string"),
        ConfigField("include_comments", "Include comments", "boolean", "Index the comments too.", default=True),
        ConfigField("federated_search", "Search at query time", "boolean",
                    "Do not index the repositories: search them on GitHub (issue search) each time the collection "
                    "is searched.", default=False),
    ),
    labels=("Code", "Ticketing"),
    entity_types=(GitHubIssueEntity, GitHubCommentEntity),
    federated_search=True,
    supports_access_control=True,
    mirrored_permissions=(("public and internal repositories: open to the organization", True),
                          ("private repositories: collaborators (direct, outside, through teams, base permission, "
                           "owners)", True),
                          ("teams and child teams as nested groups", True),
                          ("collaborators without a public e-mail address", False),
                          ("fine-grained repository roles and branch rules", False),
                          ("outside collaborators kept out of internal repositories (open to all here)", False)),
    rate_limit_level="connection",
    rate_limit="5000/hour",
    base_url="https://api.github.com",
)
class GitHubSource(BaseSource):
    """Lists issues, pull requests and comments; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        repositories = [r.strip().strip("/") for r in out["repositories"]]
        bad = [r for r in repositories if not _REPO.match(r)]
        if not repositories or bad:
            raise ValueError(f"config field 'repositories' needs owner/name entries, e.g. octocat/Hello-World"
                             f"{'; not: ' + ', '.join(bad) if bad else ''}")
        out["repositories"] = list(dict.fromkeys(repositories))
        return out

    @classmethod
    def federates(cls, config: dict | None) -> bool:
        return bool((config or {}).get("federated_search"))

    def http_auth(self):
        token = self.credentials.get("personal_access_token")
        return BearerAuth(token) if token else super().http_auth()

    def http_headers(self) -> dict:
        return {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}

    # --- access ---------------------------------------------------------------------------------

    def _repository_info(self, repository: str) -> dict:
        """`GET /repos/{repository}` (cached per run). Raises SourceError (config_error) on 404 / 410."""
        cache = self.__dict__.setdefault("_repositories", {})
        if repository not in cache:
            try:
                cache[repository] = self.http.get_json(f"/repos/{repository}")
            except HttpError as exc:
                if exc.status in (404, 410):
                    raise SourceError(f"GitHub repository '{repository}' does not exist or this token cannot read it",
                                      "config_error") from None
                raise
        return cache[repository]

    def _access(self, repository: str) -> dict:
        """Entity access of `repository`'s items: open unless the repository is private."""
        info = self._repository_info(repository)
        if info.get("private") and info.get("visibility", "private") == "private":
            return {"access_viewers": [f"group:repo:{repository}"], "access_is_public": False}
        return {"access_viewers": [], "access_is_public": True}

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Members of each private repository's group: its collaborators and teams (nested); see the module.

        Raises SourceError (config_error) when GitHub refuses a listing (403: no push access or no read:org).
        """
        memberships: list[AccessMembership] = []
        teams_done: set[str] = set()
        for repository in self.config["repositories"]:
            if self._access(repository)["access_is_public"]:
                continue
            group = f"repo:{repository}"
            for user in self._listing(f"/repos/{repository}/collaborators", {"affiliation": "all"}, repository):
                email = self._email(user)
                if email:
                    memberships.append(AccessMembership(group, f"user:{email}"))
            org = repository.split("/", 1)[0]
            for team in self._listing(f"/repos/{repository}/teams", {}, repository):
                memberships.append(AccessMembership(group, f"group:team:{org}/{team['slug']}"))
                memberships += self._team(org, team["slug"], teams_done)
        return memberships

    def _team(self, org: str, slug: str, done: set[str]) -> list[AccessMembership]:
        """The members and child teams of `org`'s team `slug` (each team listed once per run, through `done`)."""
        if f"{org}/{slug}" in done:
            return []
        done.add(f"{org}/{slug}")
        group, out = f"team:{org}/{slug}", []
        for user in self._listing(f"/orgs/{org}/teams/{slug}/members", {}, f"team {org}/{slug}"):
            email = self._email(user)
            if email:
                out.append(AccessMembership(group, f"user:{email}"))
        for child in self._listing(f"/orgs/{org}/teams/{slug}/teams", {}, f"team {org}/{slug}"):
            out.append(AccessMembership(group, f"group:team:{org}/{child['slug']}"))
            out += self._team(org, child["slug"], done)
        return out

    def _listing(self, url: str, params: dict, what: str) -> Iterator[dict]:
        try:
            for page in self.http.paginate(url, params={**params, "per_page": 100}):
                yield from page.json()
        except HttpError as exc:
            if exc.status in (403, 404):
                raise SourceError(f"GitHub does not let this token list the people of {what} (HTTP {exc.status}): "
                                  "mirroring a private repository's access needs push access to it and the "
                                  "read:org scope", "config_error") from None
            raise

    def _email(self, user: dict) -> str:
        """The user's e-mail address, lower-cased: the listed one, else the public one of their profile ("" if none)."""
        emails = self.__dict__.setdefault("_emails", {})
        login = user.get("login") or ""
        if login not in emails:
            email = user.get("email")
            if not email and login:
                email = self.http.get_json(f"/users/{login}").get("email")
            emails[login] = (email or "").strip().lower()
        return emails[login]

    # --- listing ---------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = (cursor or {}).get("since") or {}
        self._incremental = bool(previous)
        self._since = dict(previous)
        if self.federates(self.config):
            # Federated: nothing is indexed. An empty full listing: issues synced before the switch go.
            self._incremental, self._since = False, {}
            return
        for repository in self.config["repositories"]:
            yield from self._repository(repository, previous.get(repository))

    def _repository(self, repository: str, since: str | None) -> Iterator[BaseEntity]:
        access = self._access(repository)
        params = {"state": "all", "per_page": 100}
        if since:
            params["since"] = since
        try:
            for page in self.http.paginate(f"/repos/{repository}/issues", params=params):
                for issue in page.json():
                    yield self._issue(repository, issue, access)
                    if self.config.get("include_comments", True) and issue.get("comments"):
                        yield from self._comments(repository, issue, access)
                    newest = self._since.get(repository)
                    if issue["updated_at"] and (newest is None or issue["updated_at"] > newest):
                        self._since[repository] = issue["updated_at"]
        except HttpError as exc:
            if exc.status in (404, 410):
                raise SourceError(f"GitHub repository '{repository}' does not exist or this token cannot read it",
                                  "config_error") from None
            raise

    def _issue(self, repository: str, issue: dict, access: dict) -> GitHubIssueEntity:
        breadcrumbs = [Breadcrumb(repository, repository, "GitHubRepository")]
        return GitHubIssueEntity(
            entity_id=f"{repository}#{issue['number']}", name=issue["title"], breadcrumbs=breadcrumbs,
            created_at=parse_time(issue.get("created_at")), updated_at=parse_time(issue.get("updated_at")),
            web_url=issue.get("html_url", ""), url=issue.get("url", ""),
            repository=repository, number=issue["number"], state=issue.get("state", ""),
            is_pull_request="pull_request" in issue, author=(issue.get("user") or {}).get("login", ""),
            labels=[label["name"] for label in issue.get("labels") or []], body=issue.get("body") or "",
            raw_source_fields={"number": issue["number"], "state": issue.get("state"),
                               "is_pull_request": "pull_request" in issue,
                               "labels": [label["name"] for label in issue.get("labels") or []],
                               "author": (issue.get("user") or {}).get("login", ""),
                               "closed_at": issue.get("closed_at")},
            **access,
        )

    def _comments(self, repository: str, issue: dict, access: dict) -> Iterator[GitHubCommentEntity]:
        breadcrumbs = [Breadcrumb(repository, repository, "GitHubRepository"),
                       Breadcrumb(f"{repository}#{issue['number']}", issue["title"], "GitHubIssueEntity")]
        for page in self.http.paginate(issue["comments_url"], params={"per_page": 100}):
            for comment in page.json():
                author = (comment.get("user") or {}).get("login", "")
                yield GitHubCommentEntity(
                    entity_id=f"{repository}#{issue['number']}/comment/{comment['id']}",
                    name=f"{issue['title']} (comment by {author})", breadcrumbs=breadcrumbs,
                    created_at=parse_time(comment.get("created_at")), updated_at=parse_time(comment.get("updated_at")),
                    web_url=comment.get("html_url", ""), url=comment.get("url", ""), repository=repository,
                    issue_number=issue["number"], author=author, body=comment.get("body") or "",
                    raw_source_fields={"author": author, "issue_number": issue["number"]}, **access,
                )

    def is_full_listing(self) -> bool:
        return not self._incremental

    def next_cursor(self) -> dict:
        return {"since": self._since}

    # --- federated search ---------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[dict]:
        """Up to `limit` (at most 100) issues and pull requests of the repositories matching `query`, best first.

        Each hit is a pipeline-shaped result: `entity_id` ("owner/name#123", the id a synced issue
        would have), `name`, `textual_representation`, `breadcrumbs`, `created_at`, `updated_at`,
        `web_url`, `url`, `system_metadata`, `source_fields`, `access` (the repository's, see the module).
        Raises HttpError, RateLimited,
        NetworkError or AuthFailure (connectors.http) when GitHub fails.
        """
        text = search_text(query)
        if not text:
            return []
        qualifiers = " ".join(f"repo:{repository}" for repository in self.config["repositories"])
        body = self.http.get_json("/search/issues", params={"q": f"{text} {qualifiers}",
                                                            "per_page": max(1, min(int(limit), 100))})
        return [self._hit(item) for item in (body.get("items") or [])[:limit]]

    def _hit(self, item: dict) -> dict:
        repository = item.get("repository_url", "").split("/repos/", 1)[-1]
        entity = self._issue(repository, item, self._access(repository))
        entity.body = entity.body[:MAX_BODY_CHARS]
        return {
            "entity_id": entity.entity_id, "name": entity.name,
            "textual_representation": entity.textual_representation(),
            "breadcrumbs": [b.as_dict() for b in entity.breadcrumbs],
            "created_at": entity.created_at.isoformat() if entity.created_at else None,
            "updated_at": entity.updated_at.isoformat() if entity.updated_at else None,
            "web_url": entity.web_url, "url": entity.url or None,
            "system_metadata": {"source_name": self.short_name, "entity_type": GitHubIssueEntity.entity_type(),
                                "original_entity_id": entity.entity_id, "chunk_index": 0, "sync_id": None,
                                "sync_job_id": None, "federated": True},
            "source_fields": {**entity.raw_source_fields, "github_score": item.get("score")},
            "access": {"viewers": entity.access_viewers, "is_public": entity.access_is_public},
        }


def search_text(query: str) -> str:
    """The user's words for GitHub search: quotes balanced, cut at a word to 256 characters."""
    text = " ".join(query.split())
    if text.count('"') % 2:
        text = text.replace('"', "")
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return text
