"""The bitbucket source against a fake API that answers only Bitbucket Cloud's documented
requests (basic auth or Bearer; the repeated `state`, `pagelen`, `sort`, `q`; `next` URLs):
pull requests over two pages with their comments (a deleted one left out), a 429 with
Retry-After waited out, an expired OAuth token refreshed through the `bitbucket` provider entry,
a refused token marking the connection `needs_reauth`, a sync found by search, an incremental
run by `q=updated_on > mark`, and a repository dropped from the config removed by a forced full
sync."""
from __future__ import annotations

import base64
import time

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.bitbucket import STATES, BitbucketPullRequestEntity, BitbucketSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.bitbucket.org"
CREDENTIALS = {"username": "ana@harbour.example", "api_token": "ATATT3xFfGF0bitbucket0123456789"}
AUTH = {"Authorization": "Basic " + base64.b64encode(
    f"{CREDENTIALS['username']}:{CREDENTIALS['api_token']}".encode()).decode()}
REPOS = ["harbour/booking", "harbour/website"]
CONFIG = {"repositories": REPOS}
LIST = {"state": STATES, "pagelen": "50", "sort": "updated_on"}


def pr(repo, number, title, description, updated, comments=0):
    return {"id": number, "title": title, "description": description, "state": "OPEN", "comment_count": comments,
            "author": {"display_name": "Ana Lima", "type": "user"}, "created_on": "2024-05-01T08:00:00.000000+00:00",
            "updated_on": updated, "source": {"branch": {"name": "feature/refunds"}},
            "destination": {"branch": {"name": "main"}},
            "links": {"html": {"href": f"https://bitbucket.org/{repo}/pull-requests/{number}"}}}


B1 = pr("harbour/booking", 1, "Automatic refunds for cancelled sailings", "Refund the card when a sailing is "
        "cancelled.", "2024-05-02T10:00:00.000000+00:00", comments=2)
B2 = pr("harbour/booking", 2, "Cabin picker", "Pick a cabin on the night ferry.", "2024-05-03T10:00:00.000000+00:00")
W1 = pr("harbour/website", 7, "New timetable page", "Summer timetable with a printable view.",
        "2024-05-01T10:00:00.000000+00:00")
COMMENTS = [{"id": 1, "content": {"raw": "Does this handle partial refunds?"}, "user": {"display_name": "Bo Chen"},
             "deleted": False},
            {"id": 2, "content": {"raw": ""}, "user": {"display_name": "Bo Chen"}, "deleted": True}]


def repos(fake, headers=AUTH, since=None, booking=((B1,), (B2,)), website=((W1,),)):
    extra = {"q": f"updated_on > {since}"} if since else {}
    for repo, pages in (("harbour/booking", booking), ("harbour/website", website)):
        path = f"/2.0/repositories/{repo}/pullrequests"
        for n, page in enumerate(pages, start=1):
            nxt = {"next": f"{API}{path}?state=OPEN&state=MERGED&state=DECLINED&state=SUPERSEDED&pagelen=50"
                           f"&sort=updated_on&page={n + 1}"} if n < len(pages) else {}
            query = {**LIST, **extra} if n == 1 else {"state": STATES, "pagelen": "50", "sort": "updated_on",
                                                      "page": str(n)}
            fake.route("GET", path, query=query, headers=headers,
                       reply={"values": list(page), "pagelen": 50, "page": n, **nxt})
    fake.route("GET", "/2.0/repositories/harbour/booking/pullrequests/1/comments", query={"pagelen": "100"},
               headers=headers, reply={"values": COMMENTS, "pagelen": 100, "page": 1})


def test_pull_requests_over_two_pages_with_comments(vendor):
    repos(vendor(API))
    source = BitbucketSource(BitbucketSource.validate_config(CONFIG), dict(CREDENTIALS))
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["harbour/booking!1", "harbour/booking!2", "harbour/website!7"]
    refunds = entities["harbour/booking!1"]
    assert isinstance(refunds, BitbucketPullRequestEntity) and refunds.comments == [
        "Bo Chen: Does this handle partial refunds?"]
    assert refunds.branches == "feature/refunds → main"
    assert refunds.web_url == "https://bitbucket.org/harbour/booking/pull-requests/1"
    assert source.next_cursor()["since"]["harbour/booking"] == "2024-05-03T10:00:00.000000+00:00"


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/2.0/repositories/harbour/booking/pullrequests", query=LIST, headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"type": "error", "error": {"message": "Rate limit for this resource has been "
                                                                           "exceeded"}}),
        (200, {}, {"values": [B2], "pagelen": 50})])
    repos(fake)
    source = BitbucketSource(BitbucketSource.validate_config(CONFIG), dict(CREDENTIALS))
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 2 and limited.calls == 2 and len(waits) == 1


def test_an_expired_oauth_token_is_refreshed_and_a_refused_token_needs_reauth(vendor, make_collection):
    site = vendor("https://bitbucket.org")
    refresh = site.route("POST", "/site/oauth2/access_token",
                         headers={"Authorization": "Basic " + base64.b64encode(b"key:secret").decode()},
                         form={"grant_type": "refresh_token", "refresh_token": "bb-r1"},
                         reply={"access_token": "bb-oauth-2", "refresh_token": "bb-r1", "token_type": "bearer",
                                "expires_in": 7200, "scopes": "pullrequest"})
    fake = vendor(API)
    repos(fake, headers={"Authorization": "Bearer bb-oauth-2"})
    source = BitbucketSource(BitbucketSource.validate_config(CONFIG), {
        "access_token": "bb-oauth-1", "refresh_token": "bb-r1", "expires_at": time.time() - 1,
        "client_id": "key", "client_secret": "secret"})
    assert len(list(source.generate_entities({}))) == 3 and refresh.calls == 1

    fake.route("GET", "/2.0/repositories/harbour/booking/pullrequests", query=LIST,
               reply=(401, {}, {"type": "error", "error": {"message": "Access token expired."}}))
    connection = connect(make_collection(), "bitbucket", {**CREDENTIALS, "api_token": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_incremental_then_a_dropped_repository_goes_at_a_full_sync(vendor, make_collection, client):
    fake = vendor(API)
    repos(fake)
    connection = connect(make_collection(), "bitbucket", dict(CREDENTIALS), CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "refund the card when a sailing is cancelled", limit=1) == ["harbour/booking!1"]

    fake.routes.clear()
    edited = {**B2, "description": "Pick a cabin and a berth on the night ferry.",
              "updated_on": "2024-05-04T10:00:00.000000+00:00"}
    fake.route("GET", "/2.0/repositories/harbour/booking/pullrequests",
               query={**LIST, "q": "updated_on > 2024-05-03T10:00:00.000000+00:00"}, headers=AUTH,
               reply={"values": [edited], "pagelen": 50})
    fake.route("GET", "/2.0/repositories/harbour/website/pullrequests",
               query={**LIST, "q": "updated_on > 2024-05-01T10:00:00.000000+00:00"}, headers=AUTH,
               reply={"values": [], "pagelen": 50})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 0), job.error
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["harbour/booking"] == edited["updated_on"]

    connection.config = {"repositories": ["harbour/booking"]}
    connection.save(update_fields=["config"])
    fake.routes.clear()
    repos(fake, booking=((B1, edited),), website=())
    job = run_sync(connection, force_full_sync=True)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        {"harbour/booking!1", "harbour/booking!2"}
