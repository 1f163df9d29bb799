"""Webhooks in-process (tasks inline): subscriptions over REST, events of collections, connections
and syncs signed per Standard Webhooks, attempts recorded, retries with backoff, recovery."""
from __future__ import annotations

import ast
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from airweave.webhooks import tasks
from airweave.webhooks.models import WebhookAttempt, WebhookDelivery
from airweave.webhooks.services import retry_delay_seconds
from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True
    settings.AIRWEAVE_WEBHOOK_RETRY_SECONDS = 2
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def inline(django_capture_on_commit_callbacks):
    """Run the deliveries queued at commit (the test's transaction never commits)."""
    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()
    return run


def subscribe(client, receiver, event_types, **extra):
    r = client.post("/webhooks/subscriptions", {"url": receiver.url, "event_types": event_types, **extra}, format="json")
    assert r.status_code == 200, r.content
    body = r.json()
    receiver.secret = client.get(f"/webhooks/subscriptions/{body['id']}?include_secret=true").json()["secret"]
    return body


def test_a_signed_event_for_each_collection_change(client, receiver, inline):
    sub = subscribe(client, receiver, ["collection.created", "collection.updated", "collection.deleted"])
    assert sub["filter_types"] == ["collection.created", "collection.updated", "collection.deleted"]
    assert sub["health_status"] == "unknown" and sub["disabled"] is False
    inline(lambda: client.post("/collections", {"name": "Hooked docs", "readable_id": "hooked"}, format="json"))
    inline(lambda: client.patch("/collections/hooked", {"name": "Hooked documents"}, format="json"))
    inline(lambda: client.delete("/collections/hooked"))
    got = receiver.wait_for(3)
    assert [g["body"]["event_type"] for g in got] == ["collection.created", "collection.updated", "collection.deleted"]
    assert all(g["verified"] for g in got)
    assert got[1]["body"]["collection_name"] == "Hooked documents" and got[0]["body"]["collection_readable_id"] == "hooked"
    headers = got[0]["headers"]
    assert headers["webhook-id"].startswith("msg_") and headers["webhook-signature"].startswith("v1,")
    assert abs(int(headers["webhook-timestamp"]) - timezone.now().timestamp()) < 60
    messages = client.get("/webhooks/messages?event_types=collection.updated").json()
    assert [m["event_type"] for m in messages] == ["collection.updated"]
    detail = client.get(f"/webhooks/messages/{messages[0]['id']}?include_attempts=true").json()
    [attempt] = detail["delivery_attempts"]
    assert attempt["status"] == "success" and attempt["response_status_code"] == 200 and attempt["endpoint_id"] == sub["id"]
    assert attempt["duration_ms"] >= 0 and attempt["response"] == "ok"
    assert client.get(f"/webhooks/subscriptions/{sub['id']}").json()["health_status"] == "healthy"


def test_sync_events_of_a_real_sync(client, receiver, inline, make_collection, settings, tmp_path, write_files):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    make_collection(readable_id="docs")
    subscribe(client, receiver, ["sync.pending", "sync.running", "sync.completed", "source_connection.created"])
    folder = write_files({"a.md": "# A\nalpha", "b.md": "# B\nbeta"})
    r = inline(lambda: client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "docs",
                                                           "config": {"path": str(folder)}}, format="json"))
    assert r.status_code == 201
    got = receiver.wait_for(4)
    kinds = [g["body"]["event_type"] for g in got]
    assert kinds == ["source_connection.created", "sync.pending", "sync.running", "sync.completed"], kinds
    done = got[-1]["body"]
    assert done["status"] == "completed" and done["entities"]["inserted"] == 2 and done["source_type"] == "local_files"
    assert done["source_connection_id"] == r.json()["id"] and done["collection_readable_id"] == "docs"
    assert all(g["verified"] for g in got)


def test_a_failed_delivery_is_retried_with_backoff_then_recovered(client, receiver, inline, settings):
    settings.AIRWEAVE_WEBHOOK_MAX_ATTEMPTS = 2
    receiver.statuses = [500, 503]
    sub = subscribe(client, receiver, ["collection.created"])
    inline(lambda: client.post("/collections", {"name": "Flaky receiver", "readable_id": "flaky"}, format="json"))
    delivery = WebhookDelivery.objects.get(subscription_id=sub["id"])
    assert delivery.status == "pending" and delivery.attempt_count == 1
    schedule = Schedule.objects.get(name=f"webhook-retry-{delivery.id}-1")
    assert schedule.func == "airweave.webhooks.tasks.deliver" and schedule.schedule_type == Schedule.ONCE
    assert timedelta(seconds=1) < schedule.next_run - timezone.now() <= timedelta(seconds=2)  # base 2 s × 2^0
    assert retry_delay_seconds(3) == 8  # doubling

    tasks.deliver(*ast.literal_eval(schedule.args))  # what django-q2's scheduler runs when it is due
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempt_count == 2  # out of attempts
    statuses = list(WebhookAttempt.objects.filter(delivery=delivery).order_by("number")
                    .values_list("status", "response_status_code", "trigger"))
    assert statuses == [("failed", 500, "scheduled"), ("failed", 503, "retry")]
    assert client.get(f"/webhooks/subscriptions/{sub['id']}").json()["health_status"] == "failing"

    since = (timezone.now() - timedelta(minutes=5)).isoformat()
    r = inline(lambda: client.post(f"/webhooks/subscriptions/{sub['id']}/recover", {"since": since}, format="json"))
    assert r.json()["status"] == "running" and r.json()["queued_messages"] == 1
    got = receiver.wait_for(3)
    assert got[-1]["status"] == 200 and got[-1]["verified"] and got[-1]["body"]["collection_readable_id"] == "flaky"
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    assert client.get(f"/webhooks/subscriptions/{sub['id']}").json()["health_status"] == "degraded"


def test_a_disabled_subscription_gets_nothing_until_re_enabled_with_recover_since(client, receiver, inline):
    sub = subscribe(client, receiver, ["collection.created"])
    before = timezone.now().isoformat()
    assert client.patch(f"/webhooks/subscriptions/{sub['id']}", {"disabled": True}, format="json").json()["disabled"]
    inline(lambda: client.post("/collections", {"name": "While paused", "readable_id": "paused"}, format="json"))
    assert receiver.received == []
    r = inline(lambda: client.patch(f"/webhooks/subscriptions/{sub['id']}",
                                    {"disabled": False, "recover_since": before}, format="json"))
    assert r.json()["disabled"] is False
    got = receiver.wait_for(1)
    assert got[0]["body"]["collection_readable_id"] == "paused" and got[0]["verified"]


def test_a_hanging_receiver_is_cut_off_by_the_timeout_and_recorded(client, settings, inline):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True
    settings.AIRWEAVE_WEBHOOK_READ_TIMEOUT = 0.5
    slow = Receiver(hang=3)
    try:
        sub = client.post("/webhooks/subscriptions", {"url": slow.url, "event_types": ["collection.created"]},
                          format="json").json()
        inline(lambda: client.post("/collections", {"name": "Slow receiver", "readable_id": "slow"}, format="json"))
        attempt = WebhookAttempt.objects.get(subscription_id=sub["id"])
        assert attempt.status == "failed" and attempt.response_status_code == 0 and "ReadTimeout" in attempt.response
        assert attempt.duration_ms < 2500
    finally:
        slow.close()


@pytest.mark.parametrize("body, field", [
    ({"url": "ftp://example.com/x", "event_types": ["sync.completed"]}, "url"),
    ({"url": "https://example.com/x", "event_types": []}, "event_types"),
    ({"url": "https://example.com/x", "event_types": ["sync.exploded"]}, "event_types"),
    ({"url": "https://example.com/x", "event_types": ["sync.completed"], "secret": "not-base64-but-long-enough!!"}, "secret"),
    ({"url": "http://127.0.0.1:9/x", "event_types": ["sync.completed"]}, "url"),
])
def test_bad_subscriptions_are_422_naming_the_field(client, body, field):
    r = client.post("/webhooks/subscriptions", body, format="json")
    assert r.status_code == 422, r.content
    assert any(field in d["loc"] for d in r.json()["detail"]), r.json()


def test_another_organizations_subscription_and_message_are_404(client, other_client, receiver, settings):
    sub = subscribe(client, receiver, ["collection.created"])
    assert other_client.get(f"/webhooks/subscriptions/{sub['id']}").status_code == 404
    assert other_client.delete(f"/webhooks/subscriptions/{sub['id']}").status_code == 404
    assert client.delete(f"/webhooks/subscriptions/{sub['id']}").status_code == 200
    assert client.get("/webhooks/subscriptions").json() == []
