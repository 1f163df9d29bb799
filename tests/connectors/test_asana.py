"""The Asana source against Asana's documented response shapes (fixtures/asana), served by `responses`:
offset pagination, comments from stories, a 429 retried, an expired OAuth token refreshed, a
`modified_since` run that finds a deleted task by its absent id, and a sync found by search."""
from __future__ import annotations

from urllib.parse import parse_qs

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.registry import source_for_connection
from connectors.services import source_connection_create
from connectors.sources.asana import AsanaProjectEntity, AsanaSource, AsanaTaskEntity
from tests.connectors.saas_cases import connect, fixture, query, run_sync, search_ids

API = "https://app.asana.com/api/1.0"
PROJECT = "1204870263318123"
OFFSET = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJib3JkZXJfcmFuayI6IjEifQ.a1"
T1, T2, T3 = "1204870263318501", "1204870263318502", "1204870263318503"


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("asana", name)


def add_full_listing(rsps):
    rsps.add("GET", f"{API}/workspaces", json=f("workspaces"))
    rsps.add("GET", f"{API}/projects", match=[query(workspace="1201994503261445", archived="false")],
             json=f("projects"))
    rsps.add("GET", f"{API}/tasks", match=[query(project=PROJECT, limit=100, absent=("offset", "modified_since"))],
             json=f("tasks_page1"))
    rsps.add("GET", f"{API}/tasks", match=[query(project=PROJECT, offset=OFFSET)], json=f("tasks_page2"))
    rsps.add("GET", f"{API}/tasks/{T1}/stories", json=f("stories_task1"))
    rsps.add("GET", f"{API}/tasks/{T2}/stories", json=f("stories_empty"))
    rsps.add("GET", f"{API}/tasks/{T3}/stories", json=f("stories_empty"))


def make(**config):
    return AsanaSource(AsanaSource.validate_config(config), {"personal_access_token": "2/1201/1207:abc"})


def test_a_full_listing_of_projects_and_tasks_with_comments(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert sorted(entities) == [f"project:{PROJECT}", f"task:{T1}", f"task:{T2}", f"task:{T3}"]
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer 2/1201/1207:abc"
    project = entities[f"project:{PROJECT}"]
    assert isinstance(project, AsanaProjectEntity) and project.team == "Operations"
    task = entities[f"task:{T1}"]
    assert isinstance(task, AsanaTaskEntity) and task.name == "Map the picking aisles"
    assert [b.name for b in task.breadcrumbs] == ["Fern Robotics", "Warehouse pilot", "In progress"]
    assert task.web_url == f"https://app.asana.com/0/{PROJECT}/{T1}"
    assert [c.author for c in task.comments] == ["Tiago Melo"]  # the "assigned" story is not a comment
    assert "robot mast must stay under 2 m" in task.textual_representation()
    assert task.raw_source_fields["tags"] == ["mapping"] and task.raw_source_fields["completed"] is False
    assert entities[f"task:{T3}"].completed is True
    assert source.is_full_listing()
    assert source.next_cursor() == {"since": {PROJECT: "2024-05-02T11:30:00.000Z"}}
    assert source.present_entity_ids() is None  # a full listing needs no cheap listing


def test_a_429_is_retried(rsps):
    limited = rsps.add("GET", f"{API}/workspaces", status=429, headers={"Retry-After": "0"}, json=f("rate_limited"))
    rsps.add("GET", f"{API}/workspaces", json={"data": [], "next_page": None})
    assert list(make().generate_entities({})) == [] and limited.call_count == 1


def test_an_expired_oauth_token_is_refreshed(rsps, make_collection, monkeypatch):
    monkeypatch.setenv("AIRWEAVE_OAUTH_ASANA_CLIENT_ID", "1207000000000001")
    monkeypatch.setenv("AIRWEAVE_OAUTH_ASANA_CLIENT_SECRET", "asana-secret")
    connection = source_connection_create(collection=make_collection(), short_name="asana",
                                          authentication={"access_token": "expired", "refresh_token": "1/r-token"},
                                          sync_immediately=False)
    rsps.add("GET", f"{API}/workspaces", status=401, json=f("unauthorized"),
             match=[responses.matchers.header_matcher({"Authorization": "Bearer expired"})])
    token = rsps.add("POST", "https://app.asana.com/-/oauth_token", json=f("token_refreshed"))
    rsps.add("GET", f"{API}/workspaces", json={"data": [], "next_page": None},
             match=[responses.matchers.header_matcher({"Authorization": f"Bearer {f('token_refreshed')['access_token']}"})])
    assert list(source_for_connection(connection).generate_entities({})) == []
    assert parse_qs(token.calls[0].request.body)["refresh_token"] == ["1/r-token"]
    connection.refresh_from_db()
    stored = decrypt_json(connection.encrypted_credentials)
    assert stored["access_token"] == f("token_refreshed")["access_token"] and stored["refresh_token"] == "1/r-token"


def test_sync_search_then_modified_since_and_a_deleted_task(rsps, make_collection, client):
    connection = connect(make_collection(), "asana", {"personal_access_token": "2/1201/1207:abc"})
    add_full_listing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4)
    assert search_ids(client, "aisle beam height robot mast", limit=1) == [f"task:{T1}"]

    rsps.reset()
    rsps.add("GET", f"{API}/workspaces", json=f("workspaces"))
    rsps.add("GET", f"{API}/projects", json=f("projects"))
    rsps.add("GET", f"{API}/tasks", match=[query(project=PROJECT, modified_since="2024-05-02T11:30:00.000Z")],
             json=f("tasks_changed"))
    rsps.add("GET", f"{API}/tasks/{T2}/stories", json=f("stories_task2_new"))
    rsps.add("GET", f"{API}/tasks", match=[query(project=PROJECT, opt_fields="gid", absent=("modified_since",))],
             json=f("task_ids"))
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert ids == {f"project:{PROJECT}", f"task:{T1}", f"task:{T2}"}
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {PROJECT: "2024-05-06T09:00:00.000Z"}}
    assert search_ids(client, "risk assessment approved by the site manager", limit=1) == [f"task:{T2}"]


def test_a_vanished_project_takes_its_tasks_and_its_mark_with_it(rsps):
    rsps.add("GET", f"{API}/workspaces", json=f("workspaces"))
    rsps.add("GET", f"{API}/projects", json={"data": [], "next_page": None})
    source = make()
    assert list(source.generate_entities({"since": {PROJECT: "2024-05-02T11:30:00.000Z"}})) == []
    assert not source.is_full_listing() and source.present_entity_ids() == set()  # nothing of it is present
    assert source.next_cursor() == {"since": {}}
