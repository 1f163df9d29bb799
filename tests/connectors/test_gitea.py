"""The gitea source against a fake instance that answers only the API requests Gitea documents
(`Authorization: token ...`, `state`, `limit`, `since`; `Link` paging): issues and a pull request
over two pages with their comments, a 429 with Retry-After waited out, a refused token marking
the connection `needs_reauth`, an unknown repository as `config_error`, a sync found by search,
an incremental run by `since`, and the periodic full listing that removes a deleted issue."""
from __future__ import annotations

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.gitea import GiteaIssueEntity, GiteaSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://codeberg.org"
TOKEN = "5f0c2e1d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
AUTH = {"Authorization": f"token {TOKEN}"}
REPO = "harbour/booking"
CONFIG = {"base_url": SITE, "repositories": [REPO]}
ISSUES = f"/api/v1/repos/{REPO}/issues"


def issue(number, title, body, updated, comments=0, pull=False, labels=()):
    out = {"id": 1000 + number, "number": number, "title": title, "body": body, "state": "open",
           "user": {"login": "ana"}, "labels": [{"id": 1, "name": n} for n in labels], "comments": comments,
           "created_at": "2024-05-01T08:00:00+02:00", "updated_at": updated,
           "html_url": f"{SITE}/{REPO}/{'pulls' if pull else 'issues'}/{number}", "pull_request": None}
    if pull:
        out["pull_request"] = {"merged": False, "merged_at": None}
    return out


I1 = issue(1, "Refund button missing", "The refund button is gone on Android.", "2024-05-02T10:00:00+02:00",
           comments=1, labels=("bug",))
I2 = issue(2, "Seat map for the night ferry", "Show cabins on the seat map.", "2024-05-03T10:00:00+02:00")
P3 = issue(3, "Add cabin picker", "Implements #2.", "2024-05-04T10:00:00+02:00", pull=True)
COMMENTS = [{"id": 9001, "user": {"login": "bo"}, "body": "Fixed in 4.2.1, the button moved to the ticket menu.",
             "created_at": "2024-05-02T10:00:00+02:00"}]


def repo(fake, pages=((I1, I2), (P3,)), since=None):
    base = {"state": "all", "limit": "50", **({"since": since} if since else {})}
    pages = list(pages)
    for n, chunk in enumerate(pages, start=1):
        link = {"Link": f'<{SITE}{ISSUES}?{"&".join(f"{k}={v}" for k, v in base.items())}&page={n + 1}>; '
                        f'rel="next"'} if n < len(pages) else {}
        fake.route("GET", ISSUES, query={**base, **({"page": str(n)} if n > 1 else {})}, headers=AUTH,
                   reply=(200, {"X-Total-Count": "3", **link}, list(chunk)))
    fake.route("GET", f"{ISSUES}/1/comments", headers=AUTH, reply=COMMENTS)


def test_issues_and_a_pull_request_over_two_pages_with_comments(vendor):
    repo(vendor(SITE))
    source = GiteaSource(GiteaSource.validate_config(CONFIG), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == [f"{REPO}#1", f"{REPO}#2", f"{REPO}#3"]
    refund = entities[f"{REPO}#1"]
    assert isinstance(refund, GiteaIssueEntity) and refund.comments == [
        "bo: Fixed in 4.2.1, the button moved to the ticket menu."]
    assert refund.web_url == f"{SITE}/{REPO}/issues/1" and refund.labels == ["bug"]
    assert entities[f"{REPO}#3"].kind == "pull request"
    assert source.is_full_listing() and source.next_cursor()["since"] == {REPO: "2024-05-04T10:00:00+02:00"}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", ISSUES, query={"state": "all", "limit": "50"}, headers=AUTH,
                         reply=[(429, {"Retry-After": "0"}, {"message": "rate limit exceeded"}), (200, {}, [I2])])
    repo(fake)
    source = GiteaSource(GiteaSource.validate_config(CONFIG), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_needs_reauth_and_an_unknown_repository_is_a_config_error(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", ISSUES, query={"state": "all", "limit": "50"}, headers={"Authorization": "token revoked-0123456789"},
               reply=(401, {}, {"message": "user does not exist [uid: 0, name: ]", "url": f"{SITE}/api/swagger"}))
    fake.route("GET", "/api/v1/repos/harbour/gone/issues", query={"state": "all", "limit": "50"}, headers=AUTH,
               reply=(404, {}, {"errors": ["repository does not exist"], "message": "The target couldn't be found."}))
    connection = connect(make_collection(), "gitea", {"access_token": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    other = connect(make_collection(readable_id="other"), "gitea", {"access_token": TOKEN},
                    {"base_url": SITE, "repositories": ["harbour/gone"]})
    assert (run_sync(other).error_category) == "config_error"


def test_sync_search_incremental_then_a_full_listing_removes_a_deleted_issue(vendor, make_collection, client):
    fake = vendor(SITE)
    repo(fake)
    connection = connect(make_collection(), "gitea", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "where did the refund button go on android", limit=1) == [f"{REPO}#1"]

    fake.routes.clear()
    edited = {**I2, "body": "Show cabins and deck chairs on the seat map.", "updated_at": "2024-05-05T10:00:00+02:00"}
    repo(fake, pages=((edited,),), since="2024-05-04T10:00:00+02:00")
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 0), job.error

    # Issue 1 was deleted by an admin; the next run is due for its full listing.
    cursor = SyncCursor.objects.get(sync_id=job.sync_id)
    cursor.data = {**cursor.data, "full_at": cursor.data["full_at"] - 8 * 86400}
    cursor.save(update_fields=["data"])
    fake.routes.clear()
    repo(fake, pages=((edited, P3),))
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {f"{REPO}#2", f"{REPO}#3"}
