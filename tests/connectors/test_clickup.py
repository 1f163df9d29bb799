"""The ClickUp source against ClickUp's documented response shapes (fixtures/clickup), served by
`responses`: page-number pagination of a Workspace's tasks, comments, breadcrumbs, a 429 waited out on
`X-RateLimit-Reset`, a refused token, a `date_updated_gt` run whose cheap id listing removes a deleted
task, and a sync found by search."""
from __future__ import annotations

import time

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.clickup import ClickUpSource, ClickUpTaskEntity
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://api.clickup.com/api/v2"
TEAM = "9011234567"
TOKEN = "pk_183_ZQ5X3N1L2K9J8H7G6F5D4S3A2P1O0I9U"


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("clickup", name)


def add_hierarchy(rsps):
    rsps.add("GET", f"{API}/team", json=f("team"))
    rsps.add("GET", f"{API}/team/{TEAM}/space", json=f("spaces"))


def add_full_listing(rsps):
    add_hierarchy(rsps)
    rsps.add("GET", f"{API}/team/{TEAM}/task", match=[query(page=0, absent=("date_updated_gt",))], json=f("tasks_page0"))
    rsps.add("GET", f"{API}/team/{TEAM}/task", match=[query(page=1)], json=f("tasks_page1"))
    rsps.add("GET", f"{API}/task/86a1b2c3d/comment", json=f("comments_t1"))
    rsps.add("GET", f"{API}/task/86a1b2c3e/comment", json=f("no_comments"))
    rsps.add("GET", f"{API}/task/86a1b2c3f/comment", json=f("no_comments"))


def make(**config):
    return ClickUpSource(ClickUpSource.validate_config(config), {"api_token": TOKEN})


def test_a_full_listing_pages_through_the_workspace_tasks(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == ["task:86a1b2c3d", "task:86a1b2c3e", "task:86a1b2c3f"]
    assert rsps.calls[0].request.headers["Authorization"] == TOKEN  # ClickUp takes the bare token
    task = entities["task:86a1b2c3d"]
    assert isinstance(task, ClickUpTaskEntity) and task.status == "in progress" and task.priority == "high"
    assert [b.name for b in task.breadcrumbs] == ["Kestrel Labs", "Engineering", "Q2 roadmap", "Sprint 12"]
    assert [b.name for b in entities["task:86a1b2c3e"].breadcrumbs] == ["Kestrel Labs", "Engineering", "Sprint 12"]
    assert [c.author for c in task.comments] == ["Rui Pinto", "Ana Costa"]  # oldest first
    assert "purge the log" in task.textual_representation() and "old password is revoked" in task.textual_representation()
    assert task.web_url == "https://app.clickup.com/t/86a1b2c3d" and task.due == "2024-05-20"
    assert task.raw_source_fields["tags"] == ["security"]
    assert source.is_full_listing()
    assert source.next_cursor()["since"] == {TEAM: 1714636800000}


def test_a_429_is_waited_out(rsps):
    rsps.add("GET", f"{API}/team", status=429, json=f("rate_limited"),
             headers={"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()))})
    rsps.add("GET", f"{API}/team", json={"teams": []})
    assert list(make().generate_entities({})) == []


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "clickup", {"api_token": TOKEN})
    rsps.add("GET", f"{API}/team", status=401, json=f("unauthorized"))
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert connection.status == "needs_reauth"


def test_sync_search_then_an_incremental_run_updates_and_deletes(rsps, make_collection, client):
    connection = connect(make_collection(), "clickup", {"api_token": TOKEN})
    add_full_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3)
    assert search_ids(client, "staging database password leaked in CI", limit=1) == ["task:86a1b2c3d"]

    rsps.reset()
    add_hierarchy(rsps)
    rsps.add("GET", f"{API}/team/{TEAM}/task", match=[query(date_updated_gt=1714636800000)], json=f("tasks_changed"))
    rsps.add("GET", f"{API}/task/86a1b2c3e/comment", json=f("no_comments"))
    # The cheap id listing: every page, no comments; 86a1b2c3f was deleted.
    rsps.add("GET", f"{API}/team/{TEAM}/task", match=[query(page=0, absent=("date_updated_gt",))], json=f("tasks_page0"))
    rsps.add("GET", f"{API}/team/{TEAM}/task", match=[query(page=1)], json={"tasks": [], "last_page": True})
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {"task:86a1b2c3d", "task:86a1b2c3e"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {TEAM: 1714700000000}}
    assert search_ids(client, "race in the coupon cache warm-up", limit=1) == ["task:86a1b2c3e"]
