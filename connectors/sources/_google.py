"""What the Google sources (Drive, Gmail, Calendar) share: time parsing and Google's error shapes.

Google answers errors as `{"error": {"code", "message", "status", "errors": [{"domain",
"reason", "message"}]}}`. Two of them need more than the HTTP client's policy:

- a 403 whose reason is `rateLimitExceeded` / `userRateLimitExceeded` is a rate limit
  without a `Retry-After` header (Google asks for exponential backoff): `google_get` retries it
  with backoff through the client's sleeper, like a 429;
- a 403 `insufficientPermissions` / `ACCESS_TOKEN_SCOPE_INSUFFICIENT` means the grant lacks a
  scope: an AuthFailure("insufficient_scope") so the connection is marked needs_reauth; a 403
  `accessNotConfigured` (the API is not enabled in the OAuth client's Cloud project) is a
  SourceError("config_error").
"""
from __future__ import annotations

import json
import random
from datetime import datetime, timezone

import requests

from connectors.base import AuthFailure, SourceError
from connectors.http import HttpError

RATE_LIMIT_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
SCOPE_REASONS = frozenset({"insufficientPermissions", "ACCESS_TOKEN_SCOPE_INSUFFICIENT"})
RATE_LIMIT_ATTEMPTS = 5


def epoch_ms_time(value) -> datetime | None:
    """Milliseconds since the epoch (Gmail's `internalDate`, a string) as an aware UTC datetime."""
    try:
        return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc)
    except (TypeError, ValueError, OverflowError):
        return None


def error_reasons(exc: HttpError) -> set[str]:
    """The `reason`s (and the `status`) of a Google error body; empty when the body is not one."""
    try:
        error = json.loads(exc.body or "{}").get("error") or {}
    except (ValueError, AttributeError):
        return set()
    if not isinstance(error, dict):
        return set()
    reasons = {e.get("reason") for e in error.get("errors") or [] if isinstance(e, dict)}
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and detail.get("reason"):
            reasons.add(detail["reason"])
    if error.get("status"):
        reasons.add(error["status"])
    return {r for r in reasons if r}


def google_get(source, url: str, **kwargs) -> requests.Response:
    """`source.http.get(url, **kwargs)`, with Google's 403 rate limits retried and its 403 scope and
    configuration errors turned into AuthFailure / SourceError. Other HttpErrors propagate."""
    http = source.http
    for attempt in range(1, RATE_LIMIT_ATTEMPTS + 1):
        try:
            return http.get(url, **kwargs)
        except HttpError as exc:
            if exc.status != 403:
                raise
            reasons = error_reasons(exc)
            if reasons & RATE_LIMIT_REASONS and attempt < RATE_LIMIT_ATTEMPTS:
                http.sleep(min(60.0, 2 ** (attempt - 1) + random.uniform(0, 1)))
                continue
            if reasons & SCOPE_REASONS:
                failure = AuthFailure(f"{source.name}: the Google grant lacks a scope this source needs; "
                                      f"authorize the source connection again", "insufficient_scope")
                if http.on_auth_failure is not None:
                    http.on_auth_failure(failure)
                raise failure from None
            if "accessNotConfigured" in reasons or "SERVICE_DISABLED" in reasons:
                raise SourceError(f"{source.name}: the API is not enabled in the OAuth client's Google Cloud "
                                  f"project ({' '.join(exc.body.split())[:200]})", "config_error") from None
            raise
    raise AssertionError("unreachable")  # pragma: no cover


def google_json(source, url: str, **kwargs):
    """`google_get(...)` decoded as JSON."""
    response = google_get(source, url, **kwargs)
    try:
        return response.json()
    except ValueError:
        raise HttpError(f"{url} answered a body that is not JSON", status=response.status_code, url=url,
                        body=response.text[:500], response=response) from None
