"""Source rate limits: moving-window budgets keyed per organization or per connection, shared through Redis."""
from __future__ import annotations

import uuid

import pytest
import redis
import responses

from connectors import registry
from connectors.base import BaseSource, SourceContext
from connectors.http import RateLimited, RateLimiter, limiter_key
from connectors.http.ratelimit import default_storage_url
from tests.connectors.saas_helpers import registered

REDIS = "redis://127.0.0.1:6379/13"


def unique_key() -> str:
    return f"test:{uuid.uuid4().hex}"


def test_a_budget_refuses_the_request_over_it_and_says_how_long_to_wait():
    limiter = RateLimiter("2/minute", unique_key(), storage_url="memory://")
    assert limiter.try_acquire() == 0.0 and limiter.try_acquire() == 0.0
    wait = limiter.try_acquire()
    assert 0 < wait <= 60


def test_keys_are_independent():
    a = RateLimiter("1/minute", unique_key(), storage_url="memory://")
    b = RateLimiter("1/minute", unique_key(), storage_url="memory://")
    assert a.try_acquire() == 0.0 and b.try_acquire() == 0.0 and a.try_acquire() > 0


def test_acquire_waits_for_the_window_then_goes_on():
    limiter = RateLimiter("1/second", unique_key(), storage_url="memory://")
    assert limiter.acquire() == 0.0
    assert limiter.acquire() > 0  # really slept until the window moved


def test_acquire_gives_up_after_max_wait():
    slept = []
    limiter = RateLimiter("1/hour", unique_key(), storage_url="memory://", max_wait=30, sleep=slept.append)
    limiter.acquire()
    with pytest.raises(RateLimited):
        limiter.acquire()
    assert slept == []  # the first wait already exceeds max_wait: no pointless sleeping


@pytest.fixture
def redis_url():
    try:
        redis.Redis.from_url(REDIS).ping()
    except redis.exceptions.ConnectionError:
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return REDIS


def test_two_processes_share_one_budget_through_redis(redis_url):
    key = unique_key()
    worker_1 = RateLimiter("3/minute", key, storage_url=redis_url)
    worker_2 = RateLimiter("3/minute", key, storage_url=redis_url)
    assert [worker_1.try_acquire(), worker_2.try_acquire(), worker_1.try_acquire()] == [0.0, 0.0, 0.0]
    assert worker_2.try_acquire() > 0 and worker_1.try_acquire() > 0


def test_storage_defaults_to_redis_url_when_configured(settings):
    settings.AIRWEAVE_RATE_LIMIT_STORAGE_URL = ""
    settings.REDIS_URL = "redis://127.0.0.1:6379/12"
    assert default_storage_url() == "redis://127.0.0.1:6379/12"
    settings.REDIS_URL = ""
    assert default_storage_url() == "memory://"


class LimitedSource(BaseSource):
    def generate_entities(self, cursor):
        return iter(())


def fresh():
    """A new subclass per declaration (the decorator sets class attributes)."""
    return type("Limited", (LimitedSource,), {})


def _client(org, connection, cls=None):
    source = (cls or registry.get_source("limited"))({}, {})
    source.context = SourceContext(organization_id=org, source_connection_id=connection)
    return source.http


def test_org_level_sources_share_a_budget_across_connections_of_an_org():
    with registered(fresh(), name="Limited", short_name="limited", rate_limit_level="org",
                    rate_limit="3/second", base_url="https://api.limited.example"):
        assert _client("o1", "c1").rate_limiter.key == _client("o1", "c2").rate_limiter.key == "limited:org:o1"
        assert _client("o2", "c3").rate_limiter.key == "limited:org:o2"


def test_connection_level_sources_have_a_budget_per_connection():
    with registered(fresh(), name="Limited", short_name="limited", rate_limit_level="connection",
                    rate_limit="3/second"):
        assert _client("o1", "c1").rate_limiter.key == "limited:connection:c1"
        assert _client("o1", "c2").rate_limiter.key == "limited:connection:c2"
    with registered(fresh(), name="Limited", short_name="limited"):
        assert _client("o1", "c1").rate_limiter is None
    with pytest.raises(ValueError):
        limiter_key("x", "team")


def test_every_attempt_takes_from_the_budget():
    with registered(fresh(), name="Limited", short_name="limited", rate_limit_level="connection",
                    rate_limit="100/minute", base_url="https://api.limited.example"):
        client = _client("o1", unique_key())
        client.sleep = lambda s: None
        with responses.RequestsMock() as rsps:
            rsps.add("GET", "https://api.limited.example/x", status=503)
            rsps.add("GET", "https://api.limited.example/x", json={})
            client.get("/x")
        stats = client.rate_limiter._limiter.get_window_stats(client.rate_limiter.item, "airweave",
                                                               client.rate_limiter.key)
        assert stats.remaining == 98
