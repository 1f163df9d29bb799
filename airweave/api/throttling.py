"""Per-organization rate limits (DRF throttles on Django's cache) and their RateLimit-* headers.

Fixed windows counted with `cache.add` + `cache.incr` (atomic on Redis, which settings pick
when REDIS_URL is set, so every web process shares the counts; the default local-memory cache
counts per process). Rates are settings: AIRWEAVE_RATE_LIMIT for every API request of an
organization and AIRWEAVE_SEARCH_RATE_LIMIT, in addition, for search endpoints (views with
`throttle_scope = "search"`). A rate reads "<requests>/<second|minute|hour|day>"; empty disables.

Each throttle records its state on the request; RateLimitHeadersMiddleware writes the most
restrictive one as `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until
the window ends) on every API response, and a refused request answers 429 with `Retry-After`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import BaseThrottle

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
           "d": 86400, "day": 86400}
REQUEST_ATTRIBUTE = "airweave_rate_limits"


@dataclass(frozen=True)
class RateLimitState:
    """One throttle's window after this request: `reset` is seconds until the window ends."""

    limit: int
    remaining: int
    reset: int
    allowed: bool = True


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """"600/minute" → (600, 60); "" or None → None. Raises ImproperlyConfigured for anything else."""
    if not rate:
        return None
    try:
        count, period = rate.strip().split("/")
        return int(count), PERIODS[period.strip().lower()]
    except (ValueError, KeyError):
        raise ImproperlyConfigured(f"bad rate {rate!r}: write it as <requests>/<second|minute|hour|day>") from None


def rate_limit_consume(scope: str, setting: str, organization_pk, now: float | None = None) -> RateLimitState | None:
    """Count one request of the organization `organization_pk` in the window of the rate named by
    `setting` (e.g. AIRWEAVE_SEARCH_RATE_LIMIT), counted under `scope` ("api", "search").

    Returns the window's state after this request (`remaining` 0 and `allowed` false once past the
    limit), or None when the setting is empty (no limit). Every face (REST, MCP) counts here, so
    an organization has one budget whatever it calls. Raises ImproperlyConfigured for a bad rate.
    """
    rate = parse_rate(getattr(settings, setting, ""))
    if rate is None:
        return None
    limit, duration = rate
    now = time.time() if now is None else now
    window = int(now // duration)
    key = f"airweave:throttle:{scope}:{organization_pk}:{duration}:{window}"
    cache = caches[getattr(settings, "AIRWEAVE_RATE_LIMIT_CACHE", "default")]
    cache.add(key, 0, timeout=duration + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr, or a cache that keeps nothing (DummyCache)
        cache.set(key, 1, timeout=duration + 1)
        count = 1
    reset = max(1, math.ceil((window + 1) * duration - now))
    return RateLimitState(limit=limit, remaining=max(0, limit - count), reset=reset, allowed=count <= limit)


class OrganizationRateThrottle(BaseThrottle):
    """Limits the requests of one organization (all its keys and users together) per window."""

    scope = "api"
    setting = "AIRWEAVE_RATE_LIMIT"
    timer = staticmethod(time.time)  # seconds since the epoch (replaceable in tests, as in DRF)

    def applies(self, view) -> bool:
        return True

    def allow_request(self, request, view) -> bool:
        organization = getattr(request, "organization", None)
        if organization is None or not self.applies(view):
            return True
        state = rate_limit_consume(self.scope, self.setting, organization.pk, now=self.timer())
        if state is None:
            return True
        states = getattr(request._request, REQUEST_ATTRIBUTE, [])
        setattr(request._request, REQUEST_ATTRIBUTE, [*states, state])
        self._wait = state.reset
        return state.allowed

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)


class SearchRateThrottle(OrganizationRateThrottle):
    """A second, usually lower, limit on the search endpoints of an organization."""

    scope = "search"
    setting = "AIRWEAVE_SEARCH_RATE_LIMIT"

    def applies(self, view) -> bool:
        return getattr(view, "throttle_scope", None) == "search"


class RateLimitHeadersMiddleware:
    """Writes RateLimit-Limit / -Remaining / -Reset from the most restrictive throttle of the request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        states = getattr(request, REQUEST_ATTRIBUTE, None)
        if states:
            tightest = min(states, key=lambda s: (s.remaining, -s.reset))
            response["RateLimit-Limit"] = str(tightest.limit)
            response["RateLimit-Remaining"] = str(tightest.remaining)
            response["RateLimit-Reset"] = str(tightest.reset)
        return response
