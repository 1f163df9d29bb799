"""Per-organization rate limits: RateLimit-* headers on every answer, 429 with Retry-After past the limit.

The test settings use a DummyCache (nothing is counted); these tests switch to a real cache:
local memory, and Redis (db 12) for the shared multi-process case.
"""
from __future__ import annotations

import pytest
import redis
from django.core.cache import caches
from rest_framework.test import APIClient

from airweave.api.throttling import OrganizationRateThrottle, parse_rate
from airweave.tenancy.services import api_key_create

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rate-limit-tests"}}


@pytest.fixture
def clock(monkeypatch):
    """A frozen clock 20 s into a minute, so no test straddles a window (the first search loads a model)."""
    now = [1_800_000_000.0 + 20]
    monkeypatch.setattr(OrganizationRateThrottle, "timer", staticmethod(lambda: now[0]))
    return now


@pytest.fixture
def real_cache(settings, clock):
    settings.CACHES = LOCMEM
    caches["default"].clear()
    yield
    caches["default"].clear()


def _headers(response) -> tuple[int, int, int]:
    return int(response["RateLimit-Limit"]), int(response["RateLimit-Remaining"]), int(response["RateLimit-Reset"])


def test_successful_answers_carry_the_headers(client, settings, real_cache):
    settings.AIRWEAVE_RATE_LIMIT = "5/minute"
    first = client.get("/collections")
    assert first.status_code == 200
    assert _headers(first) == (5, 4, 40)
    assert _headers(client.get("/collections/count"))[1] == 3


def test_past_the_limit_answers_429_with_retry_after(client, settings, real_cache):
    settings.AIRWEAVE_RATE_LIMIT = "3/minute"
    for _ in range(3):
        assert client.get("/collections").status_code == 200
    refused = client.get("/collections")
    assert refused.status_code == 429
    assert set(refused.json()) == {"detail"}
    assert int(refused["Retry-After"]) == 40
    assert _headers(refused) == (3, 0, 40)


def test_a_new_window_starts_afresh(client, settings, real_cache, clock):
    settings.AIRWEAVE_RATE_LIMIT = "1/minute"
    assert client.get("/collections").status_code == 200
    assert client.get("/collections").status_code == 429
    clock[0] += 40  # the next minute
    response = client.get("/collections")
    assert response.status_code == 200 and _headers(response) == (1, 0, 60)


def test_the_limit_is_per_organization_not_per_key(client, other_client, org, settings, real_cache):
    settings.AIRWEAVE_RATE_LIMIT = "2/minute"
    second_key = APIClient()
    second_key.credentials(HTTP_X_API_KEY=api_key_create(organization=org, name="second").key)
    assert client.get("/collections").status_code == 200
    assert second_key.get("/collections").status_code == 200
    assert second_key.get("/collections").status_code == 429  # the same organization's budget
    assert client.get("/collections").status_code == 429
    assert other_client.get("/collections").status_code == 200  # another organization is untouched


def test_search_endpoints_have_their_own_lower_limit(client, make_collection, settings, real_cache):
    settings.AIRWEAVE_RATE_LIMIT = "100/minute"
    settings.AIRWEAVE_SEARCH_RATE_LIMIT = "2/minute"
    make_collection(readable_id="docs")
    for _ in range(2):
        response = client.post("/collections/docs/search/instant", {"query": "anything"}, format="json")
        assert response.status_code == 200
    assert _headers(response)[:2] == (2, 0)  # the tighter of the two limits is reported
    assert client.post("/collections/docs/search/instant", {"query": "x"}, format="json").status_code == 429
    other = client.get("/collections")
    assert other.status_code == 200 and _headers(other)[0] == 100


def test_no_rate_means_no_limit_and_no_headers(client, settings, real_cache):
    settings.AIRWEAVE_RATE_LIMIT = ""
    settings.AIRWEAVE_SEARCH_RATE_LIMIT = ""
    for _ in range(5):
        response = client.get("/collections")
        assert response.status_code == 200
    assert not response.has_header("RateLimit-Limit")


def test_unauthenticated_requests_are_not_counted_against_anyone(client, settings, real_cache, db):
    settings.AIRWEAVE_RATE_LIMIT = "1/minute"
    for _ in range(3):
        assert APIClient().get("/collections").status_code == 401
    assert client.get("/collections").status_code == 200


def test_counts_are_shared_through_redis(client, settings, clock):
    """Two web processes share a Redis cache: the same counter is seen by both (here: two cache clients)."""
    try:
        redis.Redis.from_url("redis://127.0.0.1:6379/12").ping()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:6379/12", "KEY_PREFIX": "airweave-test"}}
    settings.AIRWEAVE_RATE_LIMIT = "2/minute"
    caches["default"].clear()
    try:
        assert client.get("/collections").status_code == 200
        caches["default"].close()  # a fresh connection, as another process would have
        assert _headers(client.get("/collections"))[1] == 0
        assert client.get("/collections").status_code == 429
    finally:
        caches["default"].clear()


@pytest.mark.parametrize("rate, expected", [("600/minute", (600, 60)), ("5/s", (5, 1)), ("10/hour", (10, 3600)),
                                            ("1000/day", (1000, 86400)), ("", None)])
def test_rates_parse(rate, expected):
    assert parse_rate(rate) == expected


@pytest.mark.parametrize("rate", ["many", "5/fortnight", "x/minute"])
def test_bad_rates_are_a_configuration_error(rate):
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        parse_rate(rate)
