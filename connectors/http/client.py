"""The HTTP client of one source run: timeouts, retries, rate limiting, SSRF guard and auth.

Built on requests (the transport of requests-oauthlib, and mocked at the transport level by
`responses` in tests) with tenacity driving the retries: exponential backoff with jitter,
bounded in attempts and per wait, and the server's own `Retry-After` (seconds or HTTP date),
`RateLimit-Reset` or `X-RateLimit-Reset` honoured first. urllib3's own Retry is not used: it
cannot refresh a token between attempts, nor take a cross-process rate limiter, nor cap a
Retry-After of an hour into a clear error.

What is retried: timeouts and connection failures of idempotent requests (GET, HEAD, OPTIONS,
PUT, DELETE, or any request sent with `idempotent=True`), a connect timeout always; 429
always; 408, 425, 500, 502, 503, 504 for idempotent requests; a 403 that is a rate limit
(`X-RateLimit-Remaining: 0`, or a `Retry-After` header) like a 429. A 401 makes the auth
object refresh its credentials once and the request is sent again; a second 401, or a refused
refresh, raises AuthFailure after marking the connection `needs_reauth`.
"""
from __future__ import annotations

import email.utils
import logging
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import urljoin

import requests
from django.conf import settings
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from connectors.auth.tokens import Auth, OAuth2Auth
from connectors.errors import AuthFailure, SkipEntity
from connectors.http.pagination import link_pages
from connectors.http.errors import HttpError, NetworkError, RateLimited, redact_url
from connectors.http.ratelimit import RateLimiter
from connectors.http.ssrf import guarded_session

logger = logging.getLogger(__name__)

USER_AGENT = "airweave-django-connectors/0.1"
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class _Retry(Exception):
    """One failed attempt worth another; `error` is what to raise when the attempts run out."""

    def __init__(self, error: Exception, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _setting(name: str, default):
    return getattr(settings, name, default)


class HttpClient:
    """A requests session with the policy of the module docstring. One per source run; not thread-safe.

    Args:
        base_url: joined to relative URLs ("/user/repos" → "https://api.github.com/user/repos").
        auth: a connectors.auth.tokens.Auth (NoAuth by default).
        headers: sent with every request (a User-Agent is always set).
        timeout: (connect, read) seconds; default AIRWEAVE_HTTP_CONNECT_TIMEOUT / _READ_TIMEOUT (10, 60).
        max_attempts: attempts per request, the first included; default AIRWEAVE_HTTP_MAX_ATTEMPTS (5).
        backoff_base / backoff_max: seconds; the n-th retry waits base·2^(n-1) + U(0, base), at most max.
        max_retry_after: seconds; a server asking for a longer wait raises RateLimited at once
            instead of sleeping (default AIRWEAVE_HTTP_MAX_RETRY_AFTER_SECONDS, 300).
        rate_limiter: a RateLimiter acquired before every attempt.
        on_auth_failure: called with the AuthFailure before it is raised (marks needs_reauth).
        sleep: injectable for tests.
    """

    def __init__(self, *, base_url: str = "", auth: Auth | None = None, headers: dict | None = None,
                 timeout: tuple[float, float] | None = None, max_attempts: int | None = None,
                 backoff_base: float = 1.0, backoff_max: float = 60.0, max_retry_after: float | None = None,
                 rate_limiter: RateLimiter | None = None,
                 on_auth_failure: Callable[[AuthFailure], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.base_url = base_url.rstrip("/") + "/" if base_url else ""
        self.auth = auth or Auth()
        self.timeout = timeout or (float(_setting("AIRWEAVE_HTTP_CONNECT_TIMEOUT", 10)),
                                   float(_setting("AIRWEAVE_HTTP_READ_TIMEOUT", 60)))
        self.max_attempts = max_attempts or int(_setting("AIRWEAVE_HTTP_MAX_ATTEMPTS", 5))
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = (float(_setting("AIRWEAVE_HTTP_MAX_RETRY_AFTER_SECONDS", 300))
                                if max_retry_after is None else max_retry_after)
        self.rate_limiter = rate_limiter
        self.on_auth_failure = on_auth_failure
        self.sleep = sleep
        self.session = guarded_session()
        self.session.headers["User-Agent"] = USER_AGENT
        self.session.headers.update(headers or {})
        self._temp_dir: Path | None = None

    # --- requests -------------------------------------------------------------------------

    def url(self, url: str) -> str:
        """`url` joined to base_url when relative."""
        if url.startswith(("http://", "https://")) or not self.base_url:
            return url
        return urljoin(self.base_url, url.lstrip("/"))

    def request(self, method: str, url: str, *, idempotent: bool | None = None, raise_for_status: bool = True,
                timeout: tuple[float, float] | float | None = None, **kwargs) -> requests.Response:
        """Send a request with retries, rate limiting and auth; return the final requests.Response.

        `kwargs` are requests' (params, json, data, headers, stream, allow_redirects, ...).
        `idempotent` (default: by method) allows retrying 5xx and network failures of a POST.
        `auth` (a connectors.auth.tokens.Auth) replaces the client's auth for this request only:
        `auth=NoAuth()` fetches a pre-signed link of another host without the source's credentials.
        Raises HttpError (status ≥ 400 once retries are done; with raise_for_status=False the last
        response is returned instead), RateLimited, NetworkError, AuthFailure, BlockedAddress
        (connectors.http.errors).
        """
        method = method.upper()
        url = self.url(url)
        idempotent = method in IDEMPOTENT_METHODS if idempotent is None else idempotent
        refreshed = False
        while True:
            try:
                response = self._send_with_retries(method, url, idempotent, timeout or self.timeout, kwargs)
            except HttpError as exc:
                if raise_for_status or exc.response is None:
                    raise
                return exc.response  # the caller reads the status itself, retries spent
            if response.status_code != 401:
                break
            if not refreshed and self._refresh_after_401():
                response.close()
                refreshed = True
                continue
            self.auth_failed(AuthFailure(
                f"{redact_url(url)} answered 401 {'after a token refresh' if refreshed else ''}: the credentials "
                f"were refused; authenticate the source connection again".replace("  ", " "),
                self._refused_category()))
        if raise_for_status and response.status_code >= 400:
            raise _http_error(response, url)
        return response

    def get(self, url: str, **kwargs) -> requests.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs) -> requests.Response:
        return self.request("POST", url, **kwargs)

    def head(self, url: str, **kwargs) -> requests.Response:
        return self.request("HEAD", url, **kwargs)

    def get_json(self, url: str, **kwargs) -> Any:
        """GET and decode JSON. Raises HttpError (status 200, category "http_error") on a body that is not JSON."""
        response = self.get(url, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise _http_error(response, self.url(url), "the answer is not JSON") from None

    def paginate(self, url: str, **kwargs) -> Iterator[requests.Response]:
        """GET pages following `Link: <...>; rel="next"` headers (GitHub, GitLab, ...). See pagination.link_pages."""
        return link_pages(self, url, **kwargs)

    def download(self, url: str, *, max_bytes: int | None = None, suffix: str = "", **kwargs) -> Path:
        """Stream `url` into a file of this run's temporary folder and return its path.

        Raises SkipEntity when the body is larger than `max_bytes` (default AIRWEAVE_MAX_FILE_BYTES),
        by Content-Length or while streaming. The folder is removed by `close()`.
        """
        max_bytes = max_bytes or int(_setting("AIRWEAVE_MAX_FILE_BYTES", 25 * 1024 * 1024))
        response = self.get(url, stream=True, **kwargs)
        with response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise SkipEntity(f"file too large: {declared} bytes > limit {max_bytes} bytes")
            handle = tempfile.NamedTemporaryFile(dir=self.temp_dir, suffix=suffix, delete=False)
            size = 0
            with handle:
                for block in response.iter_content(1 << 16):
                    size += len(block)
                    if size > max_bytes:
                        handle.close()
                        Path(handle.name).unlink(missing_ok=True)
                        raise SkipEntity(f"file too large: over limit {max_bytes} bytes")
                    handle.write(block)
        return Path(handle.name)

    @property
    def temp_dir(self) -> Path:
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix="airweave-source-"))
        return self._temp_dir

    def close(self) -> None:
        """Close the session and remove downloaded files."""
        self.session.close()
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    # --- internals ------------------------------------------------------------------------

    def _send_with_retries(self, method, url, idempotent, timeout, kwargs) -> requests.Response:
        jitter_wait = wait_exponential_jitter(initial=self.backoff_base, max=self.backoff_max,
                                              jitter=self.backoff_base)

        def wait(retry_state) -> float:
            exc = retry_state.outcome.exception()
            if isinstance(exc, _Retry) and exc.retry_after is not None:
                # The server's word, plus up to 10% so that many workers do not return together.
                return exc.retry_after + random.uniform(0, min(1.0, exc.retry_after * 0.1))
            return jitter_wait(retry_state)

        retrying = Retrying(stop=stop_after_attempt(self.max_attempts), wait=wait, sleep=self.sleep,
                            retry=retry_if_exception_type(_Retry), reraise=True,
                            before_sleep=lambda s: logger.info("retrying %s %s: %s", method, redact_url(url),
                                                               s.outcome.exception()))
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(method, url, idempotent, timeout, kwargs)
        except _Retry as exc:
            raise exc.error from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, method, url, idempotent, timeout, kwargs) -> requests.Response:
        self._ensure_fresh()
        if self.rate_limiter is not None:
            self.rate_limiter.acquire()
        try:
            sent = {k: v for k, v in kwargs.items() if k != "auth"}
            response = self.session.request(method, url, auth=kwargs.get("auth", self.auth), timeout=timeout,
                                            **sent)
        except requests.ConnectTimeout as exc:  # nothing was sent: always safe to retry
            raise _Retry(NetworkError(f"connect timeout on {redact_url(url)}: {type(exc).__name__}")) from None
        except (requests.Timeout, requests.ConnectionError) as exc:
            error = NetworkError(f"{type(exc).__name__} on {method} {redact_url(url)}")
            if idempotent:
                raise _Retry(error) from None
            raise error from None
        status = response.status_code
        rate_limited = status == 429 or (status == 403 and _is_rate_limit_403(response))
        if not rate_limited and status not in RETRY_STATUSES:
            return response
        retry_after = _retry_after(response)
        if rate_limited:
            error = RateLimited(f"{redact_url(url)} is rate limited (HTTP {status})", status=status,
                                url=redact_url(url), retry_after=retry_after, body=_excerpt(response),
                                response=response)
            if retry_after is not None and retry_after > self.max_retry_after:
                raise RateLimited(f"{redact_url(url)} asks to wait {retry_after:.0f} s, over the "
                                  f"{self.max_retry_after:.0f} s cap (AIRWEAVE_HTTP_MAX_RETRY_AFTER_SECONDS)",
                                  status=status, url=redact_url(url), retry_after=retry_after,
                                  body=_excerpt(response), response=response)
            response.close()
            raise _Retry(error, retry_after)
        if not idempotent:
            return response
        error = _http_error(response, url)
        response.close()
        raise _Retry(error, retry_after if retry_after is not None and retry_after <= self.max_retry_after else None)

    def _ensure_fresh(self) -> None:
        try:
            self.auth.ensure_fresh()
        except AuthFailure as exc:
            self.auth_failed(exc)

    def _refresh_after_401(self) -> bool:
        try:
            return self.auth.refresh()
        except AuthFailure as exc:
            self.auth_failed(exc)

    def _refused_category(self) -> str:
        auth = self.auth
        if isinstance(auth, OAuth2Auth) and auth._expiring(auth.credentials) and not auth.credentials.get("refresh_token"):
            return "token_expired"
        return "invalid_credentials"

    def auth_failed(self, exc: AuthFailure):
        """Report `exc` (marks the connection `needs_reauth` through `on_auth_failure`), then raise it.

        For refusals a source reads in an answer's body (S3's and Azure Storage's error codes).
        """
        if self.on_auth_failure is not None:
            self.on_auth_failure(exc)
        raise exc


def _is_rate_limit_403(response: requests.Response) -> bool:
    """A 403 that is a rate limit: `X-RateLimit-Remaining: 0` (GitHub), Canvas's `X-Rate-Limit-Remaining`
    at 0 ("0.0"; its body says "403 Forbidden (Rate Limit Exceeded)"), or a Retry-After."""
    h = response.headers
    canvas = h.get("X-Rate-Limit-Remaining")
    try:
        canvas_spent = canvas is not None and float(canvas) <= 0
    except ValueError:
        canvas_spent = False
    return h.get("X-RateLimit-Remaining") == "0" or "Retry-After" in h or canvas_spent


def _retry_after(response: requests.Response) -> float | None:
    """Seconds the server asks to wait: Retry-After (seconds or HTTP date), RateLimit-Reset (seconds),
    or X-RateLimit-Reset (epoch seconds) when X-RateLimit-Remaining is 0. None when it says nothing."""
    h = response.headers
    value = h.get("Retry-After")
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
                return max(0.0, when.timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    value = h.get("RateLimit-Reset")
    if value and value.strip().isdigit():
        return float(value)
    value = h.get("X-RateLimit-Reset")
    if value and h.get("X-RateLimit-Remaining") == "0":
        try:
            return max(0.0, float(value) - time.time())
        except ValueError:
            pass
    return None


def _excerpt(response: requests.Response) -> str:
    try:
        return response.text[:500]
    except Exception:  # a streamed or undecodable body
        return ""


def _http_error(response: requests.Response, url: str, why: str = "") -> HttpError:
    status = response.status_code
    body = _excerpt(response)
    message = f"{response.request.method if response.request else 'GET'} {redact_url(url)} answered HTTP {status}"
    if why:
        message += f": {why}"
    elif body:
        message += f": {' '.join(body[:200].split())}"
    return HttpError(message, status=status, url=redact_url(url), body=body, response=response)
