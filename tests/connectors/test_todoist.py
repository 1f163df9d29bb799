"""The Todoist source against Todoist's documented Sync answers (fixtures/todoist), served by `responses`:
a full sync (no paging: the Sync API answers the account at once), entity fields and breadcrumbs, a 429
retried, a refused token, an incremental sync token run that removes completed and deleted tasks, and a
sync found by search."""
from __future__ import annotations

from urllib.parse import parse_qs

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.base import AuthFailure
from connectors.registry import source_for_connection
from connectors.sources.todoist import TodoistCommentEntity, TodoistSource, TodoistTaskEntity
from tests.connectors.saas_cases import connect, fixture, run_sync, search_ids

API = "https://api.todoist.com/api/v1/sync"
TOKEN = "0123456789abcdef0123456789abcdef01234567"
FULL_TOKEN = "TnYUZEpuzf2FMA9qzyY3j4xky6dXiYejmSO85S5paZ_a9y1FI85mBbIWZGpW"


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("todoist", name)


def sync_token(token):
    def match(request):
        sent = parse_qs(request.body)
        return sent.get("sync_token") == [token], f"form {sent}"
    return [match]


def make():
    return TodoistSource(TodoistSource.validate_config({}), {"api_token": TOKEN})


def test_a_full_sync_lists_projects_tasks_and_comments(rsps):
    rsps.add("POST", API, match=sync_token("*"), json=f("full_sync"))
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == ["comment:6X7rfVQ5R6XjCQHV", "project:6Jf8VQXxpwv56VQ7", "project:6Jf8VQXxpwv56VQ8",
                                "task:6X7rM8997g3RQmvh", "task:6X7rfEVP8hvv25ZQ", "task:6X7rfFVPjhvv84XG"]
    request = rsps.calls[0].request
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert parse_qs(request.body)["resource_types"] == ['["projects", "sections", "items", "notes"]']
    task = entities["task:6X7rM8997g3RQmvh"]
    assert isinstance(task, TodoistTaskEntity) and task.priority == "p1" and task.due == "2024-05-10"
    assert [b.name for b in task.breadcrumbs] == ["Home renovation", "Kitchen"]
    assert task.web_url == "https://app.todoist.com/app/task/6X7rM8997g3RQmvh"
    subtask = entities["task:6X7rfFVPjhvv84XG"]
    assert [b.name for b in subtask.breadcrumbs] == ["Home renovation", "Kitchen", "Get three quotes for the countertop"]
    comment = entities["comment:6X7rfVQ5R6XjCQHV"]
    assert isinstance(comment, TodoistCommentEntity) and "1,840 EUR" in comment.textual_representation()
    assert source.is_full_listing() and source.next_cursor()["sync_token"] == FULL_TOKEN


def test_a_429_is_retried(rsps):
    limited = rsps.add("POST", API, status=429, headers={"Retry-After": "0"}, json=f("rate_limited"))
    rsps.add("POST", API, json=f("full_sync"))
    assert len(list(make().generate_entities({}))) == 6 and limited.call_count == 1


def test_a_refused_token_marks_the_connection_needs_reauth(rsps, make_collection):
    connection = connect(make_collection(), "todoist", {"api_token": TOKEN})
    rsps.add("POST", API, status=401, json=f("unauthorized"))
    with pytest.raises(AuthFailure):
        list(source_for_connection(connection).generate_entities({}))
    connection.refresh_from_db()
    assert connection.status == "needs_reauth"


def test_sync_search_then_a_sync_token_run_removes_completed_and_deleted_tasks(rsps, make_collection, client):
    connection = connect(make_collection(), "todoist", {"api_token": TOKEN})
    rsps.add("POST", API, match=sync_token("*"), json=f("full_sync"))
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 6)
    assert search_ids(client, "countertop quote installation price", limit=2)[0] in (
        "comment:6X7rfVQ5R6XjCQHV", "task:6X7rM8997g3RQmvh")

    rsps.reset()
    rsps.add("POST", API, match=sync_token(FULL_TOKEN), json=f("incremental"))
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 2)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "task:6X7rfEVP8hvv25ZQ" not in ids and "task:6X7rfFVPjhvv84XG" not in ids and len(ids) == 4
    cursor = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert cursor["sync_token"] == f("incremental")["sync_token"]
    assert cursor["names"]["section:6Jf8VQXxpwv5GxJ2"] == "Kitchen"  # kept for the breadcrumbs of later runs
    updated = Entity.objects.get(source_connection=connection, entity_id="task:6X7rM8997g3RQmvh")
    assert [b["name"] for b in updated.breadcrumbs] == ["Home renovation", "Kitchen"]
    assert search_ids(client, "quartz from Stonecraft fitting date", limit=1) == ["task:6X7rM8997g3RQmvh"]
