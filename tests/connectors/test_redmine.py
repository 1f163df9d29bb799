"""The redmine source against a fake server that answers only the REST requests Redmine
documents (`X-Redmine-API-Key`; `offset`/`limit` paging to `total_count`; `status_id=*`;
`include=journals`): projects, issues over two pages with their notes, a 429 with Retry-After
waited out, a refused key marking the connection `needs_reauth`, a sync found by search, then an
incremental run that reads only the changed issue and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import redmine
from connectors.sources.redmine import RedmineIssueEntity, RedmineSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://redmine.harbour.example"
KEY = "b7e2f1c0a9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4"
AUTH = {"X-Redmine-API-Key": KEY}
CONFIG = {"base_url": SITE}
PROJECT = {"id": 1, "name": "Booking app", "identifier": "booking", "description": "The ferry booking app",
           "status": 1, "is_public": True, "created_on": "2024-01-01T09:00:00Z", "updated_on": "2024-04-01T09:00:00Z"}


def issue(iid, subject, description, updated):
    return {"id": iid, "project": {"id": 1, "name": "Booking app"}, "tracker": {"id": 1, "name": "Bug"},
            "status": {"id": 1, "name": "New"}, "priority": {"id": 2, "name": "Normal"},
            "author": {"id": 5, "name": "Ana Lima"}, "assigned_to": {"id": 6, "name": "Bo Chen"}, "subject": subject,
            "description": description, "start_date": "2024-05-01", "done_ratio": 0, "is_private": False,
            "created_on": "2024-05-01T09:00:00Z", "updated_on": updated, "closed_on": None}


ISSUES = [issue(101, "Refund email never arrives", "Customers get no refund confirmation email.",
                "2024-05-02T09:00:00Z"),
          issue(102, "Timetable shows UTC", "Departure times show in UTC instead of local time.",
                "2024-05-03T09:00:00Z"),
          issue(103, "Slow seat map", "The seat map takes ten seconds to load.", "2024-05-01T12:00:00Z")]
JOURNALS = {101: [{"id": 1, "user": {"id": 6, "name": "Bo Chen"}, "notes": "The mail queue was stuck; fixed.",
                   "created_on": "2024-05-02T09:00:00Z", "private_notes": False, "details": []},
                  {"id": 2, "user": {"id": 6, "name": "Bo Chen"}, "notes": "", "created_on": "2024-05-02T09:01:00Z",
                   "details": [{"property": "attr", "name": "status_id", "old_value": "1", "new_value": "3"}]}]}


def server(fake, issues=ISSUES, read=None):
    fake.route("GET", "/projects.json", query={"offset": "0", "limit": "2"}, headers=AUTH,
               reply={"projects": [PROJECT], "total_count": 1, "offset": 0, "limit": 2})
    for offset in range(0, max(len(issues), 1), 2):
        fake.route("GET", "/issues.json", query={"status_id": "*", "sort": "id", "offset": str(offset), "limit": "2"},
                   headers=AUTH, reply={"issues": list(issues[offset:offset + 2]), "total_count": len(issues),
                                        "offset": offset, "limit": 2})
    for i in issues if read is None else read:
        fake.route("GET", f"/issues/{i['id']}.json", query={"include": "journals"}, headers=AUTH,
                   reply={"issue": {**i, "journals": JOURNALS.get(i["id"], [])}})


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(redmine, "LIMIT", 2)


def test_projects_and_issues_over_two_pages_with_their_notes(vendor):
    server(vendor(SITE))
    source = RedmineSource(RedmineSource.validate_config(CONFIG), {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["issue:101", "issue:102", "issue:103", "project:1"]
    refund = entities["issue:101"]
    assert isinstance(refund, RedmineIssueEntity) and refund.notes == ["Bo Chen: The mail queue was stuck; fixed."]
    assert refund.web_url == f"{SITE}/issues/101" and [b.name for b in refund.breadcrumbs] == ["Booking app"]
    assert "status: New" in refund.textual_representation()
    assert source.next_cursor() == {"since": {"issues": "2024-05-03T09:00:00Z"}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/projects.json", query={"offset": "0", "limit": "2"}, headers=AUTH,
                         reply=[(429, {"Retry-After": "0"}, "Too Many Requests"),
                                (200, {}, {"projects": [PROJECT], "total_count": 1})])
    server(fake)
    source = RedmineSource(RedmineSource.validate_config(CONFIG), {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 4 and limited.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(SITE)
    fake.route("GET", "/projects.json", query={"offset": "0", "limit": "2"},
               headers={"X-Redmine-API-Key": "revoked-0123456789"}, reply=(401, {}, ""))
    connection = connect(make_collection(), "redmine", {"api_key": "revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_only_the_changed_issue_is_read_and_a_deleted_one_removed(vendor, make_collection, client):
    fake = vendor(SITE)
    server(fake)
    connection = connect(make_collection(), "redmine", {"api_key": KEY}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "why do departure times show in UTC", limit=1) == ["issue:102"]

    fake.routes.clear()
    edited = {**ISSUES[2], "description": "The seat map takes two seconds now.", "updated_on": "2024-05-04T09:00:00Z"}
    server(fake, issues=[ISSUES[1], edited], read=[edited])  # 101 was deleted; only 103 changed
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"project:1", "issue:102", "issue:103"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"issues": "2024-05-04T09:00:00Z"}}
