"""The source HTTP client: retries (Retry-After, backoff, timeouts), error mapping, downloads, pagination.

Every test runs the real client against `responses`, a transport-level mock of requests;
sleeps are recorded instead of slept.
"""
from __future__ import annotations

import email.utils
import time

import pytest
import requests
import responses

from connectors.base import SkipEntity
from connectors.http import HttpClient, HttpError, NetworkError, RateLimited, cursor_pages, offset_pages
from connectors.base import SourceError
from tests.conftest import SHARED_DATA
from tests.connectors.recorded import add_recorded

API = "https://api.example.com"


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def make_client(sleeps):
    def make(**kwargs):
        kwargs.setdefault("base_url", API)
        kwargs.setdefault("max_attempts", 4)
        return HttpClient(sleep=sleeps.append, **kwargs)

    return make


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def test_429_with_retry_after_seconds_waits_that_long_then_succeeds(rsps, make_client, sleeps):
    rsps.add("GET", f"{API}/items", status=429, headers={"Retry-After": "7"}, json={"message": "slow down"})
    rsps.add("GET", f"{API}/items", json=[1, 2])
    assert make_client().get_json("/items") == [1, 2]
    assert len(rsps.calls) == 2
    assert len(sleeps) == 1 and 7 <= sleeps[0] <= 7.7  # the server's wait plus at most 10% jitter


def test_429_with_retry_after_http_date(rsps, make_client, sleeps):
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    rsps.add("GET", f"{API}/items", status=429, headers={"Retry-After": when})
    rsps.add("GET", f"{API}/items", json=[])
    make_client().get("/items")
    assert 25 <= sleeps[0] <= 34


def test_retry_after_over_the_cap_fails_at_once(rsps, make_client, sleeps):
    rsps.add("GET", f"{API}/items", status=429, headers={"Retry-After": "3600"})
    with pytest.raises(RateLimited) as info:
        make_client(max_retry_after=120).get("/items")
    assert info.value.category == "rate_limited" and info.value.retry_after == 3600
    assert "over the 120 s cap" in str(info.value)
    assert len(rsps.calls) == 1 and sleeps == []


def test_429_that_never_ends_raises_rate_limited_after_max_attempts(rsps, make_client, sleeps):
    rsps.add("GET", f"{API}/items", status=429, headers={"Retry-After": "1"})
    with pytest.raises(RateLimited):
        make_client(max_attempts=3).get("/items")
    assert len(rsps.calls) == 3 and len(sleeps) == 2


def test_github_style_rate_limit_403_waits_until_the_reset(rsps, make_client, sleeps):
    reset = int(time.time()) + 40
    rsps.add("GET", f"{API}/repos", status=403, json={"message": "API rate limit exceeded"},
             headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})
    rsps.add("GET", f"{API}/repos", json=[])
    make_client().get("/repos")
    assert 30 <= sleeps[0] <= 45


def test_plain_403_is_not_retried(rsps, make_client, sleeps):
    rsps.add("GET", f"{API}/secret", status=403, json={"message": "Resource not accessible by integration"})
    with pytest.raises(HttpError) as info:
        make_client().get("/secret")
    assert info.value.status == 403 and "not accessible" in str(info.value)
    assert len(rsps.calls) == 1 and sleeps == []


def test_5xx_is_retried_with_growing_bounded_backoff(rsps, make_client, sleeps):
    for _ in range(3):
        rsps.add("GET", f"{API}/items", status=502)
    rsps.add("GET", f"{API}/items", json={"ok": True})
    assert make_client(backoff_base=1.0, backoff_max=3.0).get_json("/items") == {"ok": True}
    assert len(rsps.calls) == 4
    # base·2^(n-1) + U(0, base), capped at 3 s: [1, 2), [2, 3], 3
    assert 1 <= sleeps[0] < 2 and 2 <= sleeps[1] <= 3 and sleeps[2] == 3


def test_5xx_exhausted_raises_http_error_with_status(rsps, make_client):
    rsps.add("GET", f"{API}/items", status=503, body="upstream down")
    with pytest.raises(HttpError) as info:
        make_client(max_attempts=2).get("/items")
    assert info.value.status == 503 and info.value.category == "http_error"
    assert len(rsps.calls) == 2


def test_post_is_not_retried_on_5xx_unless_idempotent(rsps, make_client):
    rsps.add("POST", f"{API}/query", status=500)
    with pytest.raises(HttpError):
        make_client().post("/query", json={})
    assert len(rsps.calls) == 1
    rsps.add("POST", f"{API}/query", json={"results": []})
    assert make_client().post("/query", json={}, idempotent=True).json() == {"results": []}


def test_post_is_retried_on_429(rsps, make_client):
    rsps.add("POST", f"{API}/query", status=429, headers={"Retry-After": "0"})
    rsps.add("POST", f"{API}/query", json={"ok": 1})
    assert make_client().post("/query", json={}).json() == {"ok": 1}


def test_read_timeout_is_retried_then_succeeds(rsps, make_client, sleeps):
    rsps.add("GET", f"{API}/slow", body=requests.ReadTimeout("read timed out"))
    rsps.add("GET", f"{API}/slow", json={"ok": 1})
    assert make_client().get_json("/slow") == {"ok": 1}
    assert len(sleeps) == 1


def test_timeouts_exhausted_raise_network_error(rsps, make_client):
    rsps.add("GET", f"{API}/slow", body=requests.ConnectionError("reset by peer"))
    with pytest.raises(NetworkError) as info:
        make_client(max_attempts=2).get("/slow")
    assert info.value.category == "network_error" and len(rsps.calls) == 2


def test_connect_timeout_of_a_post_is_retried(rsps, make_client):
    rsps.add("POST", f"{API}/query", body=requests.ConnectTimeout("connect timed out"))
    rsps.add("POST", f"{API}/query", json={"ok": 1})
    assert make_client().post("/query").json() == {"ok": 1}


def test_read_timeout_of_a_post_is_not_retried(rsps, make_client):
    rsps.add("POST", f"{API}/query", body=requests.ReadTimeout("read timed out"))
    with pytest.raises(NetworkError):
        make_client().post("/query")
    assert len(rsps.calls) == 1


def test_every_request_has_a_timeout(rsps, make_client):
    rsps.add("GET", f"{API}/items", json=[])
    make_client(timeout=(3, 9)).get("/items")
    assert rsps.calls[0].request.req_kwargs["timeout"] == (3, 9)


def test_errors_do_not_leak_query_string_secrets(rsps, make_client):
    rsps.add("GET", f"{API}/items", status=404, json={"message": "Not Found"})
    with pytest.raises(HttpError) as info:
        make_client().get("/items", params={"token": "s3cr3t"})
    assert "s3cr3t" not in str(info.value) and info.value.url == f"{API}/items"


def test_absolute_urls_bypass_base_url(rsps, make_client):
    rsps.add("GET", "https://uploads.example.com/f.txt", body="hello")
    assert make_client().get("https://uploads.example.com/f.txt").text == "hello"


def test_download_streams_to_a_temporary_file_removed_on_close(rsps, make_client):
    rsps.add("GET", f"{API}/files/1", body=b"x" * 1000, headers={"Content-Type": "application/pdf"})
    client = make_client()
    path = client.download("/files/1", suffix=".pdf")
    assert path.read_bytes() == b"x" * 1000 and path.suffix == ".pdf"
    client.close()
    assert not path.exists()


def test_download_over_the_limit_is_a_skipped_entity(rsps, make_client):
    rsps.add("GET", f"{API}/files/big", body=b"x" * 5000)
    client = make_client()
    with pytest.raises(SkipEntity, match="file too large"):
        client.download("/files/big", max_bytes=1000)
    assert list(client.temp_dir.iterdir()) == []
    client.close()


def test_link_pagination_over_recorded_github_pages(rsps, make_client):
    add_recorded(rsps, SHARED_DATA / "github_api/extracted/Repository_issues_state_all.json",
                 only=lambda i: "/issues" in i["request"]["uri"])
    client = make_client(base_url="https://api.github.com")
    pages = list(client.paginate("/repos/betamaxpy/betamax/issues", params={"state": "all", "per_page": 100}))
    issues = [issue for page in pages for issue in page.json()]
    assert [len(p.json()) for p in pages] == [100, 50]
    assert len({i["number"] for i in issues}) == 150


def test_link_pagination_refuses_a_loop(rsps, make_client):
    rsps.add("GET", f"{API}/items", json=[1], headers={"Link": f'<{API}/items?page=2>; rel="next"'})
    rsps.add("GET", f"{API}/items?page=2", json=[2], headers={"Link": f'<{API}/items?page=2>; rel="next"'})
    with pytest.raises(SourceError) as info:
        list(make_client().paginate("/items"))
    assert info.value.category == "pagination_loop"


def test_cursor_pages_follow_notion_style_cursors(rsps, make_client):
    rsps.add("POST", f"{API}/v1/search", json={"results": [1, 2], "has_more": True, "next_cursor": "c2"},
             match=[responses.matchers.json_params_matcher({})])
    rsps.add("POST", f"{API}/v1/search", json={"results": [3], "has_more": False, "next_cursor": None},
             match=[responses.matchers.json_params_matcher({"start_cursor": "c2"})])
    client = make_client()

    def fetch(cursor):
        body = client.post("/v1/search", json={"start_cursor": cursor} if cursor else {}, idempotent=True).json()
        return body["results"], body["next_cursor"] if body["has_more"] else None

    assert list(cursor_pages(fetch)) == [[1, 2], [3]]


def test_offset_pages_stop_on_a_short_page():
    data = list(range(7))
    assert list(offset_pages(lambda offset, limit: data[offset:offset + limit], page_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(offset_pages(lambda offset, limit: data[offset:offset + limit], page_size=7)) == [data]


def test_raise_for_status_false_returns_the_last_answer_once_retries_are_spent(rsps, make_client):
    rsps.add("GET", f"{API}/robots.txt", status=503, body="down")
    response = make_client(max_attempts=2).get("/robots.txt", raise_for_status=False)
    assert response.status_code == 503 and response.text == "down" and len(rsps.calls) == 2
