"""Errors of the HTTP client. All are SourceErrors, so an uncaught one fails the sync job with its category."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from connectors.errors import SourceError


def redact_url(url: str) -> str:
    """`url` without its query string and user info (they may hold keys or tokens)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class HttpError(SourceError):
    """The service answered with an error status the client does not retry (or retried in vain).

    `status` (int), `url` (redacted), `body` (the first 500 characters of the answer),
    `response` (the requests.Response). A source catches it to skip one item, e.g. on 404.
    """

    def __init__(self, message: str, *, status: int, url: str, body: str = "", response=None,
                 category: str = "http_error"):
        super().__init__(message, category)
        self.status = status
        self.url = url
        self.body = body
        self.response = response


class RateLimited(HttpError):
    """429 (or a rate-limit 403) that outlasted the retries, or asked for a wait over the cap."""

    def __init__(self, message: str, *, status: int, url: str, retry_after: float | None = None, body: str = "",
                 response=None):
        super().__init__(message, status=status, url=url, body=body, response=response, category="rate_limited")
        self.retry_after = retry_after


class NetworkError(SourceError):
    """Timeouts or connection failures that outlasted the retries."""

    def __init__(self, message: str):
        super().__init__(message, "network_error")


class BlockedAddress(SourceError):
    """A request to a private, loopback, link-local or reserved address, refused (SSRF guard).

    Allowed only with the AIRWEAVE_ALLOW_PRIVATE_HOSTS setting, or for networks listed in
    AIRWEAVE_ALLOWED_PRIVATE_NETWORKS.
    """

    def __init__(self, message: str):
        super().__init__(message, "blocked_address")
