"""Gitea and Forgejo (Codeberg included): the issues and pull requests of chosen repositories,
with their comments.

Config: `base_url` (the instance, e.g. `https://codeberg.org` or your own; SSRF-guarded),
`repositories` ("owner/name"), `full_sync_days` (default 7). Auth: an access token (Settings →
Applications, scope `read:issue` and `read:repository`), sent as `Authorization: token <token>`,
as Gitea documents; a refused token (401) marks the connection `needs_reauth`; a repository that
answers 404 fails the job with `config_error`.

API (v1): `GET /api/v1/repos/{owner}/{repo}/issues?state=all&limit=50` (issues and pull requests,
the latter carrying a `pull_request` object; `since=<mark>` on incremental runs), paged by the
`Link: <...>; rel="next"` header; `GET /api/v1/repos/{owner}/{repo}/issues/{index}/comments` for
an issue with comments. 429 and 5xx are the shared client's to retry.

Entities: GiteaIssueEntity (`owner/name#<index>`: title, state, labels, body and every comment
inside; breadcrumb: the repository; `web_url` the issue's `html_url`). Comments live inside
their issue, whose `updated_at` moves when one is added, so an incremental run re-reads them.

Incremental: cursor `{"since": {"owner/name": <newest updated_at>}, "full_at": <epoch>}`. Gitea
reports no deletions (an admin may delete an issue), so every `full_sync_days` a run lists every
issue again (a full listing: what is absent is deleted); a repository removed from the config is
dropped at that full run too.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlsplit

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, parse_time

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


@dataclass
class GiteaIssueEntity(BaseEntity):
    """An issue or pull request with its comments ("author: text" each)."""

    kind: str = "issue"
    state: str = ""
    labels: list[str] = field(default_factory=list)
    body: str = ""
    comments: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"{self.kind}, {self.state}",
                                     f"labels: {', '.join(self.labels)}" if self.labels else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.body, *self.comments) if p)


@source(
    name="Gitea / Forgejo",
    short_name="gitea",
    description="Issues and pull requests, with their comments, of Gitea or Forgejo repositories (Codeberg too).",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "Settings → Applications (read:issue, "
                             "read:repository).", required=True, is_secret=True),),
    config_fields=(
        ConfigField("base_url", "Instance URL", "string", "e.g. https://codeberg.org", required=True),
        ConfigField("repositories", "Repositories", "array", "owner/name of each repository.", required=True,
                    items_type="string"),
        ConfigField("full_sync_days", "Days between full listings", "integer", "Deleted issues are found by a "
                    "full listing this often.", default=7),
    ),
    labels=("Code", "Ticketing"),
    entity_types=(GiteaIssueEntity,),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class GiteaSource(WatermarkSource, BaseSource):
    """Lists each repository's issues since its mark; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = out["base_url"].strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError("config field 'base_url' must be the instance's http(s) URL, e.g. https://codeberg.org")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'base_url': {exc}") from None
        repos = [r.strip().strip("/") for r in out["repositories"] if r.strip()]
        bad = [r for r in repos if not _REPO.match(r)]
        if not repos or bad:
            raise ValueError(f"config field 'repositories' must list owner/name entries{': not ' + ', '.join(bad) if bad else ''}")
        if not 1 <= out["full_sync_days"] <= 365:
            raise ValueError("config field 'full_sync_days' must be between 1 and 365")
        out.update(base_url=url, repositories=repos)
        return out

    @property
    def base_url(self) -> str:
        return self.config["base_url"]

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"], "token")

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        for repo in self.config["repositories"]:
            params = {"state": "all", "limit": 50}
            since = self._marks.since(repo)
            if since:
                params["since"] = since
            try:
                pages = list(self.http.paginate(f"/api/v1/repos/{repo}/issues", params=params))
            except HttpError as exc:
                if exc.status == 404:
                    raise SourceError(f"repository {repo} does not exist on {self.base_url} or the token cannot "
                                      "read it", "config_error") from None
                raise
            for response in pages:
                for issue in response.json():
                    self._marks.advance(repo, issue.get("updated_at"))
                    yield self._issue(repo, issue)

    def _issue(self, repo: str, issue: dict) -> GiteaIssueEntity:
        comments = []
        if issue.get("comments"):
            for c in self.http.get_json(f"/api/v1/repos/{repo}/issues/{issue['number']}/comments"):
                comments.append(f"{(c.get('user') or {}).get('login', '')}: {c.get('body', '')}")
        labels = [label.get("name") for label in issue.get("labels") or [] if label.get("name")]
        kind = "pull request" if issue.get("pull_request") else "issue"
        return GiteaIssueEntity(
            entity_id=f"{repo}#{issue['number']}", name=f"{repo}#{issue['number']}: {issue.get('title', '')}",
            kind=kind, state=issue.get("state") or "", labels=labels, body=issue.get("body") or "",
            comments=comments, breadcrumbs=[Breadcrumb(repo, repo, "repository")],
            created_at=parse_time(issue.get("created_at")), updated_at=parse_time(issue.get("updated_at")),
            web_url=issue.get("html_url") or f"{self.base_url}/{repo}/issues/{issue['number']}",
            raw_source_fields={"repository": repo, "number": issue["number"], "kind": kind,
                               "state": issue.get("state"), "labels": labels,
                               "author": (issue.get("user") or {}).get("login")})

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}
