"""What Jira and Confluence share: their declaration, the site URL, the three ways to authenticate, where
the API lives, comment entities and the relative dates of incremental queries.

- Email + API token (Atlassian Cloud): HTTP basic auth against the site itself
  (`https://acme.atlassian.net/rest/...`).
- A personal access token alone (Jira / Confluence Server and Data Center): `Bearer` against the site.
- OAuth 2.0 (3LO): a bearer token valid against `https://api.atlassian.com/ex/<product>/<cloud id>/...`;
  the cloud id is the site's entry in `GET https://api.atlassian.com/oauth/token/accessible-resources`
  (matched by URL; the first site when the connection names none). Atlassian rotates refresh tokens
  (`with_rotating_refresh`); the provider entry is in connectors/auth/oauth_providers.yml.

The site URL is the user's: it is checked against the SSRF guard when the connection is created
(private addresses answer 422) and again by the HTTP client at every request.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlsplit

from connectors.auth.tokens import BasicAuth, BearerAuth
from connectors.base import BaseEntity, ConfigField, SourceError
from connectors.http import BlockedAddress
from connectors.http.ssrf import check_url
from connectors.registry import source
from connectors.sources._saas import parse_time

ACCESSIBLE_RESOURCES = "https://api.atlassian.com/oauth/token/accessible-resources"

AUTH_FIELDS = (
    ConfigField("email", "Email", "string", "The Atlassian account's email (Cloud, with an API token). Leave empty "
                "for a Server / Data Center personal access token."),
    ConfigField("api_token", "API token", "string", "An Atlassian API token (Cloud) or a personal access token "
                "(Server / Data Center).", required=True, is_secret=True),
)


MARGIN_MINUTES = 5


def atlassian_source(*, name: str, short_name: str, description: str, scope_field: ConfigField, labels: tuple,
                     entity_types: tuple, mirrored_permissions: tuple = ()):
    """The `@source` declaration of an Atlassian product: what Jira and Confluence declare alike.

    Auth: email + API token, a personal access token, or OAuth 2.0 (3LO) with rotating refresh
    tokens. Config: `site_url`, `scope_field` (the product's list of project or space keys) and
    `include_comments`. One rate limit per connection, 10 requests a second. `mirrored_permissions`:
    BaseSource's, as the product declares it.
    """
    return source(
        name=name, short_name=short_name, description=description,
        auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
        oauth_type="with_rotating_refresh",
        auth_fields=AUTH_FIELDS,
        config_fields=(
            site_field(name, "https://acme.atlassian.net"),
            scope_field,
            ConfigField("include_comments", "Include comments", "boolean", "Index the comments too.", default=True),
        ),
        labels=labels, entity_types=entity_types, rate_limit_level="connection", rate_limit="10/second",
        mirrored_permissions=mirrored_permissions,
    )


def clean_keys(out: dict, field: str, pattern: re.Pattern, examples: str) -> dict:
    """De-duplicate the keys of `out[field]` (projects, spaces) in order; raises ValueError naming the
    ones `pattern` refuses, with `examples` of valid keys (validate_config's contract)."""
    keys = [k.strip() for k in out.get(field) or []]
    bad = [k for k in keys if not pattern.match(k)]
    if bad:
        raise ValueError(f"config field '{field}' needs {examples}; not: {', '.join(bad)}")
    out[field] = list(dict.fromkeys(keys))
    return out


def minutes_since(iso_time: str) -> int:
    """Whole minutes from `iso_time` to now, plus a margin of MARGIN_MINUTES: the relative date of an
    incremental JQL or CQL query (both read absolute dates in the account's own time zone)."""
    minutes = math.ceil((datetime.now(timezone.utc) - parse_time(iso_time)).total_seconds() / 60)
    return max(minutes, 0) + MARGIN_MINUTES


def newer(newest: str | None, candidate: str | None) -> str | None:
    """The later of two ISO times (`candidate` normalised), for the `updated`/`modified` cursors."""
    if candidate and (newest is None or parse_time(candidate) > parse_time(newest)):
        return parse_time(candidate).isoformat()
    return newest


@dataclass
class AtlassianCommentEntity(BaseEntity):
    """A comment (on a Jira issue, a Confluence page or blog post): its author and body."""

    author: str = ""
    body: str = ""

    def commented_on(self) -> str:
        """What the first line names the comment as being on ("" when the name says it)."""
        return ""

    def textual_representation(self) -> str:
        on = f" on {self.commented_on()}" if self.commented_on() else ""
        return f"Comment by {self.author}{on}: {self.name}\n\n{self.body}".strip()


def site_field(product: str, example: str) -> ConfigField:
    return ConfigField("site_url", "Site URL", "string",
                       f"The {product} site, e.g. {example} (Cloud) or your Server / Data Center base URL.",
                       required=True)


def validate_site(out: dict) -> dict:
    """Normalise `out["site_url"]` (scheme + host [+ path], no trailing slash). Raises ValueError for a URL
    that is not http(s), or whose host is a private, loopback or reserved address."""
    url = (out.get("site_url") or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("config field 'site_url' must be an http(s) URL with a host, e.g. https://acme.atlassian.net")
    try:
        check_url(url)
    except BlockedAddress as exc:
        raise ValueError(f"config field 'site_url': {exc}") from None
    out["site_url"] = url
    return out


class AtlassianMixin:
    """Auth and API base of an Atlassian source; `PRODUCT` is "jira" or "confluence"."""

    PRODUCT = ""

    def http_auth(self):
        token = self.credentials.get("api_token")
        if token:
            email = self.credentials.get("email")
            return BasicAuth(email, token) if email else BearerAuth(token)
        return super().http_auth()

    @property
    def base_url(self) -> str:
        return self.config.get("site_url", "")

    @property
    def uses_oauth(self) -> bool:
        return not self.credentials.get("api_token") and bool(self.credentials.get("access_token"))

    def api_base(self) -> str:
        """Where REST paths start: the site itself, or the OAuth gateway of its cloud id (read once per run).

        Raises SourceError("config_error") when the OAuth grant does not cover the configured site.
        """
        if getattr(self, "_api_base", None):
            return self._api_base
        site = self.config["site_url"]
        if not self.uses_oauth:
            self._api_base = site
            return site
        resources = self.http.get_json(ACCESSIBLE_RESOURCES)
        host = urlsplit(site).hostname
        match = next((r for r in resources if urlsplit(r.get("url", "")).hostname == host), None)
        if match is None:
            granted = ", ".join(r.get("url", "") for r in resources) or "none"
            raise SourceError(f"the OAuth grant does not include {site} (granted sites: {granted}); authorize "
                              f"the connection on that site", "config_error")
        self._api_base = f"https://api.atlassian.com/ex/{self.PRODUCT}/{match['id']}"
        return self._api_base


def user_principal(user: dict | None) -> str | None:
    """`user:<email>` of an Atlassian user object (Jira's `emailAddress`, Confluence's `email`), or None
    when the account's profile hides its address (Cloud's default for most accounts)."""
    email = ((user or {}).get("emailAddress") or (user or {}).get("email") or "").strip().lower()
    return f"user:{email}" if email else None


def users_in(principals: set[str], members: dict[str, set[str]], depth: int = 10) -> set[str]:
    """The `user:` principals of `principals` and of the groups among them, through `members`
    ({group id: {member principal}}, ids without the "group:" prefix), nested up to `depth` levels."""
    users = {p for p in principals if p.startswith("user:")}
    groups = {p[len("group:"):] for p in principals if p.startswith("group:")}
    seen: set[str] = set()
    for _ in range(depth + 1):
        fresh = groups - seen
        if not fresh:
            break
        seen |= fresh
        groups = set()
        for group in fresh:
            for member in members.get(group, ()):
                if member.startswith("user:"):
                    users.add(member)
                else:
                    groups.add(member[len("group:"):])
    return users


def narrowed(levels: list[set[str]], members: dict[str, set[str]]) -> dict:
    """The `access_viewers` / `access_is_public` fields of an item that each of `levels` must admit.

    `levels`: the constraints that apply (a Jira project's browsers and an issue's security level; a
    Confluence space's readers and each restricted page above and at the item), each a set of
    principals; an open level (anonymous or any-licensed-user access) is left out by the caller.
    No level: open to the organization. One: its principals as they are (a group stays a group, so a
    membership change needs no re-indexing). Several: the principals every level names verbatim, plus
    the users every level admits once groups are expanded through `members` (the memberships listed in
    the same run). An empty result leaves the item closed.
    """
    if not levels:
        return {"access_viewers": [], "access_is_public": True}
    if len(levels) == 1:
        return {"access_viewers": sorted(levels[0]), "access_is_public": False}
    common = set.intersection(*[set(level) for level in levels])
    users = set.intersection(*[users_in(level, members) for level in levels])
    return {"access_viewers": sorted(common | users), "access_is_public": False}
