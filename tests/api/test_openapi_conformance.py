"""/openapi.json tells the truth (issue 12): real answers of every endpoint, validated against the
published schema with openapi-core, so the schema and the views cannot drift apart again."""
from __future__ import annotations

import pytest
from openapi_core import OpenAPI
from openapi_core.contrib.django import DjangoOpenAPIRequest, DjangoOpenAPIResponse
from rest_framework.test import APIClient

from airweave.webhooks.services import webhook_subscription_create

FILES = {"guide/leave.md": "---\ntitle: Leave policy\n---\nRequest annual leave through the HR portal two weeks ahead.",
         "notes.txt": "Quarterly planning notes: roadmap, hiring and budget."}


@pytest.fixture
def openapi(db):
    spec = APIClient().get("/openapi.json").json()
    return OpenAPI.from_dict(spec)


@pytest.fixture
def world(client, org, make_collection, sync_folder, write_files, settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    collection = make_collection(readable_id="docs")
    connection, job = sync_folder(collection, write_files(FILES))
    subscription = webhook_subscription_create(organization=org, url="https://hooks.example.com/in",
                                               event_types=["collection.updated"])
    return {"connection": connection, "job": job, "subscription": subscription}


def conforms(openapi, response):
    """The answer against the schema of its path, method and status; raises with what differs."""
    assert 200 <= response.status_code < 300, (response.status_code, response.content[:500])
    request = response.wsgi_request
    try:
        openapi.validate_response(DjangoOpenAPIRequest(request), DjangoOpenAPIResponse(response))
    except Exception as exc:
        details = "; ".join(str(e) for e in getattr(exc, "schema_errors", []) or [])
        raise AssertionError(f"{request.method} {request.path} {response.status_code}: {exc!r} {details}") from exc
    return response


def test_every_endpoint_answers_what_its_schema_says(client, openapi, world):
    cid, job = world["connection"].id, world["job"]
    sub = world["subscription"].id
    calls = [
        ("get", "/collections", None), ("get", "/collections/count", None), ("get", "/collections/docs", None),
        ("patch", "/collections/docs", {"name": "Renamed docs"}),
        ("post", "/collections", {"name": "Another collection", "readable_id": "another"}),
        ("get", "/sources", None), ("get", "/sources/local_files", None),
        ("get", "/source-connections", None), ("get", f"/source-connections/{cid}", None),
        ("get", "/collections/docs/source-connections", None),
        ("patch", f"/source-connections/{cid}", {"description": "HR"}),
        ("get", f"/source-connections/{cid}/jobs", None),
        ("post", f"/source-connections/{cid}/jobs/{job.id}/cancel", None),
        ("post", f"/source-connections/{cid}/verify-oauth", None),
        ("post", "/collections/docs/search/instant", {"query": "annual leave"}),
        ("post", "/collections/docs/search/classic", {"query": "annual leave"}),
        ("post", "/collections/docs/search/agentic", {"query": "annual leave"}),
        ("post", "/collections/docs/search", {"query": "annual leave"}),
        ("get", "/api-keys", None), ("post", "/api-keys", {"name": "schema"}),
        ("get", "/organizations", None),
        ("get", "/health", None), ("get", "/health/live", None), ("get", "/health/ready", None),
        ("get", "/webhooks/subscriptions", None), ("get", f"/webhooks/subscriptions/{sub}?include_secret=true", None),
        ("patch", f"/webhooks/subscriptions/{sub}", {"disabled": True}),
        ("post", f"/webhooks/subscriptions/{sub}/recover", {"since": "2026-01-01T00:00:00Z"}),
        ("get", "/webhooks/messages", None),
    ]
    for method, path, body in calls:
        response = getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)
        conforms(openapi, response)
    # the connection's detail says every field the schema lists, run counts included
    detail = conforms(openapi, client.get(f"/source-connections/{cid}")).json()
    assert detail["sync"]["total_runs"] == 1 and detail["sync"]["successful_runs"] == 1
    [key_id] = [k["id"] for k in client.get("/api-keys").json() if k["name"] == "schema"]
    for method, path in (("post", f"/api-keys/{key_id}/rotate"), ("get", "/api-keys"),
                         ("post", f"/source-connections/{cid}/run"), ("delete", f"/webhooks/subscriptions/{sub}"),
                         ("delete", f"/source-connections/{cid}"), ("delete", "/collections/another")):
        conforms(openapi, getattr(client, method)(path, {}, format="json"))


def test_a_webhook_message_and_users_me_conform(client, openapi, world, org, inline_tasks):
    inline_tasks(lambda: client.patch("/collections/docs", {"name": "Renamed again"}, format="json"))
    message_id = client.get("/webhooks/messages").json()[0]["id"]
    conforms(openapi, client.get(f"/webhooks/messages/{message_id}?include_attempts=true"))
    conforms(openapi, client.get("/webhooks/messages?event_types=collection.updated"))


def test_run_counts_are_exact_past_a_hundred_jobs(client, world):
    """`total_runs` counted every job, not the last hundred."""
    from airweave.collections.models import SyncJob

    connection = world["connection"]
    SyncJob.objects.bulk_create([SyncJob(organization_id=connection.organization_id, sync=connection.sync,
                                         source_connection=connection, status="failed") for _ in range(130)])
    sync = client.get(f"/source-connections/{connection.id}").json()["sync"]
    assert (sync["total_runs"], sync["successful_runs"], sync["failed_runs"]) == (131, 1, 130)


@pytest.fixture
def inline_tasks(django_capture_on_commit_callbacks):
    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()
    return run
