"""What Jira and Confluence share: the site URL, the three ways to authenticate, and where the API lives.

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

from urllib.parse import urlsplit

from connectors.auth.tokens import BasicAuth, BearerAuth
from connectors.base import ConfigField, SourceError
from connectors.http import BlockedAddress
from connectors.http.ssrf import check_url

ACCESSIBLE_RESOURCES = "https://api.atlassian.com/oauth/token/accessible-resources"

AUTH_FIELDS = (
    ConfigField("email", "Email", "string", "The Atlassian account's email (Cloud, with an API token). Leave empty "
                "for a Server / Data Center personal access token."),
    ConfigField("api_token", "API token", "string", "An Atlassian API token (Cloud) or a personal access token "
                "(Server / Data Center).", required=True, is_secret=True),
)


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
