"""Bitbucket Cloud: the pull requests of chosen repositories, with their comments.

Config: `repositories` ("workspace/repo_slug"). Auth: an API token (or app password) with the
Atlassian account's email or Bitbucket username, sent as HTTP basic auth, or OAuth 2 (browser
flow, bring-your-own consumer, or an injected token; access tokens last two hours and come with
a refresh token: `with_refresh`, the consumer authenticated by basic auth, the `bitbucket`
entry of oauth_providers.yml). A refused credential (401) is refreshed once (OAuth) or marks the
connection `needs_reauth`; a repository that answers 404 fails the job with `config_error`.

API (2.0): `GET /2.0/repositories/{workspace}/{repo}/pullrequests?state=OPEN&state=MERGED&state=
DECLINED&state=SUPERSEDED&pagelen=50&sort=updated_on` (and `q=updated_on > <mark>` on incremental
runs), paged by the answer's `next` URL; `GET .../pullrequests/{id}/comments?pagelen=100` for a
pull request with comments. Bitbucket allows 1,000 requests an hour per user for API reads and
answers 429 with Retry-After, which the shared client waits out.

Entities: BitbucketPullRequestEntity (`workspace/repo!<id>`: title, state, branches, author,
description and its comments inside, deleted comments left out; breadcrumb: the repository;
`web_url` the pull request's page). A new comment moves the pull request's `updated_on`, so an
incremental run re-reads it.

Incremental: cursor `{"since": {"workspace/repo": <newest updated_on>}}`. Bitbucket cannot delete
a pull request (only decline it, which is kept with its state), so nothing is deleted by an
incremental run; a forced full sync removes the pull requests of a repository dropped from the
config.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, parse_time

API = "https://api.bitbucket.org"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
STATES = ["OPEN", "MERGED", "DECLINED", "SUPERSEDED"]
PAGELEN = 50


@dataclass
class BitbucketPullRequestEntity(BaseEntity):
    """A pull request with its comments ("author: text" each)."""

    state: str = ""
    author: str = ""
    branches: str = ""
    description: str = ""
    comments: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        meta = "; ".join(m for m in (f"pull request, {self.state}", self.branches,
                                     f"by {self.author}" if self.author else "") if m)
        return "\n\n".join(p for p in (f"# {self.name}", meta, self.description, *self.comments) if p)


@source(
    name="Bitbucket",
    short_name="bitbucket",
    description="Pull requests of Bitbucket Cloud repositories, with their comments.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    auth_fields=(
        ConfigField("username", "Email or username", "string", "The account's email (API tokens) or Bitbucket "
                    "username (app passwords).", required=True),
        ConfigField("api_token", "API token", "string", "An API token with read:pullrequest:bitbucket, or an app "
                    "password.", required=True, is_secret=True),
    ),
    config_fields=(ConfigField("repositories", "Repositories", "array", "workspace/repo_slug of each repository.",
                               required=True, items_type="string"),),
    labels=("Code",),
    entity_types=(BitbucketPullRequestEntity,),
    rate_limit_level="connection",
    rate_limit="1000/hour",
    base_url=API,
)
class BitbucketSource(WatermarkSource, BaseSource):
    """Lists each repository's pull requests updated since its mark; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        repos = [r.strip().strip("/") for r in out["repositories"] if r.strip()]
        bad = [r for r in repos if not _REPO.match(r)]
        if not repos or bad:
            raise ValueError("config field 'repositories' must list workspace/repo_slug entries"
                             + (f": not {', '.join(bad)}" if bad else ""))
        out["repositories"] = repos
        return out

    def http_auth(self):
        if self.credentials.get("api_token"):
            return BasicAuth(self.credentials["username"], self.credentials["api_token"])
        return super().http_auth()

    def _values(self, url: str, params: dict | None) -> Iterator[dict]:
        while url:
            body = self.http.get_json(url, params=params)
            yield from body.get("values") or []
            url, params = body.get("next"), None  # the next URL carries the query

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        for repo in self.config["repositories"]:
            params = {"state": STATES, "pagelen": PAGELEN, "sort": "updated_on"}
            since = self._marks.since(repo)
            if since:
                params["q"] = f"updated_on > {since}"
            try:
                pulls = list(self._values(f"/2.0/repositories/{repo}/pullrequests", params))
            except HttpError as exc:
                if exc.status == 404:
                    raise SourceError(f"repository {repo} does not exist or the credentials cannot read it",
                                      "config_error") from None
                raise
            for pr in pulls:
                self._marks.advance(repo, pr.get("updated_on"))
                yield self._pull_request(repo, pr)

    def _pull_request(self, repo: str, pr: dict) -> BitbucketPullRequestEntity:
        comments = []
        if pr.get("comment_count"):
            for c in self._values(f"/2.0/repositories/{repo}/pullrequests/{pr['id']}/comments", {"pagelen": 100}):
                if not c.get("deleted"):
                    comments.append(f"{(c.get('user') or {}).get('display_name', '')}: "
                                    f"{(c.get('content') or {}).get('raw', '')}")
        branch = lambda side: (((pr.get(side) or {}).get("branch")) or {}).get("name", "")  # noqa: E731
        author = (pr.get("author") or {}).get("display_name") or ""
        return BitbucketPullRequestEntity(
            entity_id=f"{repo}!{pr['id']}", name=f"{repo}!{pr['id']}: {pr.get('title', '')}", state=pr.get("state", ""),
            author=author, branches=f"{branch('source')} → {branch('destination')}",
            description=pr.get("description") or "", comments=comments,
            breadcrumbs=[Breadcrumb(repo, repo, "repository")], created_at=parse_time(pr.get("created_on")),
            updated_at=parse_time(pr.get("updated_on")),
            web_url=((pr.get("links") or {}).get("html") or {}).get("href") or
            f"https://bitbucket.org/{repo}/pull-requests/{pr['id']}",
            raw_source_fields={"repository": repo, "state": pr.get("state"), "author": author,
                               "source_branch": branch("source"), "destination_branch": branch("destination")})

    def is_full_listing(self) -> bool:
        return not self._marks.incremental
