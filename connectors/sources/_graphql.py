"""What the GraphQL sources share (Linear, Shopify, Fireflies): one query, its errors, its throttling.

A GraphQL API answers most failures as HTTP 200 with an `errors` list whose entries carry
`extensions.code`. `GraphQLSource.graphql(query, variables)` posts `{"query", "variables"}` to
`GRAPHQL_URL` (read-only, so retried like a GET: 429 and 5xx are the shared client's) and reads
the answer: a code of `THROTTLED_CODES` waits `throttle_wait(response, body)` seconds and asks
again (at most `MAX_THROTTLE_RETRIES` times, then RateLimited); a code of `AUTH_CODES`, or HTTP
401, raises AuthFailure (`invalid_credentials`); any other error raises SourceError naming the
vendor (`VENDOR`). `nodes(query, key, variables)` walks a connection paged by
`pageInfo { hasNextPage endCursor }` through the `after` variable.
"""
from __future__ import annotations

from typing import ClassVar, Iterator

from connectors.base import AuthFailure, SourceError
from connectors.http import RateLimited

MAX_THROTTLE_RETRIES = 5


class GraphQLSource:
    """Mixin for a BaseSource reading a GraphQL API; see the module docstring."""

    GRAPHQL_URL: ClassVar[str] = "/graphql"
    VENDOR: ClassVar[str] = "The service"
    THROTTLED_CODES: ClassVar[frozenset[str]] = frozenset({"RATELIMITED", "THROTTLED"})
    AUTH_CODES: ClassVar[frozenset[str]] = frozenset({"AUTHENTICATION_ERROR", "UNAUTHENTICATED", "ACCESS_DENIED"})

    def throttle_wait(self, response, body: dict) -> float:
        """Seconds to wait before asking again after a throttled answer (default 60; vendors override)."""
        return 60.0

    def graphql(self, query: str, variables: dict) -> dict:
        """The `data` of one GraphQL query. Raises AuthFailure, RateLimited or SourceError (module docstring)."""
        for attempt in range(MAX_THROTTLE_RETRIES + 1):
            response = self.http.post(self.GRAPHQL_URL, json={"query": query, "variables": variables},
                                      idempotent=True, raise_for_status=False)
            try:
                body = response.json()
            except ValueError:
                body = {}
            errors = (body.get("errors") or []) if isinstance(body, dict) else []
            if isinstance(errors, str):  # Shopify's 401 and 5xx answers: {"errors": "<message>"}
                errors = [{"message": errors}]
            codes = {str((e.get("extensions") or {}).get("code") or "").upper() for e in errors}
            if codes & self.THROTTLED_CODES:
                wait = self.throttle_wait(response, body)
                if attempt == MAX_THROTTLE_RETRIES or wait > self.http.max_retry_after:
                    raise RateLimited(f"{self.VENDOR} keeps throttling the queries (asks to wait {wait:.0f} s)",
                                      status=response.status_code, url=self.GRAPHQL_URL, retry_after=wait)
                self.http.sleep(wait)
                continue
            if codes & self.AUTH_CODES or response.status_code == 401:
                raise AuthFailure(f"{self.VENDOR} refused the credentials: "
                                  f"{errors[0].get('message') if errors else 'HTTP 401'}", "invalid_credentials")
            if errors or response.status_code >= 400:
                message = "; ".join(str(e.get("message", "")) for e in errors) or response.text[:300]
                raise SourceError(f"{self.VENDOR} GraphQL error (HTTP {response.status_code}): {message}",
                                  "source_error")
            return body.get("data") or {}
        raise AssertionError("unreachable")  # pragma: no cover

    def nodes(self, query: str, key: str, variables: dict) -> Iterator[dict]:
        """Every node of the connection `data[key]`, following `pageInfo.endCursor` in the `after` variable."""
        after = None
        seen = set()
        while True:
            connection = self.graphql(query, {**variables, "after": after}).get(key) or {}
            yield from connection.get("nodes") or []
            info = connection.get("pageInfo") or {}
            after = info.get("endCursor")
            if not info.get("hasNextPage") or not after:
                return
            if after in seen:
                raise SourceError(f"pagination loop: the cursor repeats ({after[:100]})", "pagination_loop")
            seen.add(after)
