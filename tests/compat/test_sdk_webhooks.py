"""The SDK's eight webhooks.* methods against the live server and its worker: a subscription made
from the SDK receives a signed `sync.completed` of a real sync at a real local receiver (which
verifies the Standard Webhooks signature); a failed delivery is retried by the worker's scheduler,
and recovery sends messages again."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from tests.compat.sdk import load_sdk, wait_for_job
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.django_db
sdk = load_sdk()


@pytest.fixture(scope="module")
def client(live):
    return sdk.AirweaveSDK(base_url=live.url, api_key=live.key, timeout=120)


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.close()


def wait_until(check, timeout: float = 90, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)
    return found


def test_every_webhooks_method_and_a_signed_sync_completed(client, receiver, live):
    started = datetime.now(timezone.utc) - timedelta(seconds=5)
    subscription = client.webhooks.create_subscription(url=receiver.url, event_types=["sync.completed",
                                                                                      "collection.created"])
    assert isinstance(subscription, sdk.WebhookSubscription)
    assert subscription.url == receiver.url and subscription.filter_types == ["sync.completed", "collection.created"]
    assert subscription.disabled is False and subscription.health_status == "unknown"
    detail = client.webhooks.get_subscription(subscription.id, include_secret=True)
    assert isinstance(detail, sdk.WebhookSubscriptionDetail) and detail.secret.startswith("whsec_")
    assert detail.delivery_attempts == []
    receiver.secret = detail.secret
    assert [s.id for s in client.webhooks.get_subscriptions()] == [subscription.id]

    collection = client.collections.create(name="Hooked handbook", readable_id="hooked-handbook")
    connection = client.source_connections.create(
        short_name="local_files", readable_collection_id=collection.readable_id,
        config={"path": str(live.root / "handbook")}, sync_immediately=True)
    job = wait_for_job(client, connection.id)
    got = receiver.wait_for(2)
    by_type = {g["body"]["event_type"]: g for g in got}
    completed = by_type["sync.completed"]
    assert completed["verified"] and completed["status"] == 200
    assert completed["body"]["job_id"] == job.id and completed["body"]["source_connection_id"] == connection.id
    assert completed["body"]["collection_readable_id"] == "hooked-handbook" and completed["body"]["entities"]["inserted"] == 3
    assert by_type["collection.created"]["verified"]

    messages = client.webhooks.get_messages(event_types=["sync.completed"])
    assert all(isinstance(m, sdk.WebhookMessage) for m in messages)
    [message] = [m for m in messages if m.payload["job_id"] == job.id]
    assert message.event_type == "sync.completed" and message.timestamp >= started
    assert completed["headers"]["webhook-id"] == f"msg_{message.id.replace('-', '')}"
    with_attempts = client.webhooks.get_message(message.id, include_attempts=True)
    assert isinstance(with_attempts, sdk.WebhookMessageWithAttempts)
    [attempt] = with_attempts.delivery_attempts
    assert attempt.status == "success" and attempt.response_status_code == 200 and attempt.endpoint_id == subscription.id

    # a receiver that fails once: the worker's scheduler retries it (backoff 1 s, then the scheduler's next pass)
    receiver.statuses = [500]
    patched = client.webhooks.patch_subscription(subscription.id, event_types=["sync.completed", "collection.created",
                                                                               "collection.updated"])
    assert "collection.updated" in patched.filter_types
    client.collections.update("hooked-handbook", name="Hooked staff handbook")
    updates = wait_until(lambda: [g for g in receiver.received if g["body"]["event_type"] == "collection.updated"
                                  and g["status"] == 200], timeout=120, what="the retried delivery")
    assert updates[0]["verified"] and updates[0]["body"]["collection_name"] == "Hooked staff handbook"
    [updated] = client.webhooks.get_messages(event_types="collection.updated")
    attempts = client.webhooks.get_message(updated.id, include_attempts=True).delivery_attempts
    assert [(a.status, a.response_status_code) for a in attempts] == [("failed", 500), ("success", 200)]
    assert client.webhooks.get_subscription(subscription.id).health_status == "degraded"

    # recovery: a paused subscription misses an event, then gets it on recovery
    paused = client.webhooks.patch_subscription(subscription.id, disabled=True)
    assert paused.disabled is True
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    client.collections.create(name="Made while paused", readable_id="made-while-paused")
    time.sleep(1)
    assert not [g for g in receiver.received if g["body"].get("collection_readable_id") == "made-while-paused"]
    client.webhooks.patch_subscription(subscription.id, disabled=False)
    task = client.webhooks.recover_failed_messages(subscription.id, since=before)
    assert isinstance(task, sdk.RecoveryTask) and task.status == "running" and task.queued_messages == 1
    recovered = wait_until(lambda: [g for g in receiver.received
                                    if g["body"].get("collection_readable_id") == "made-while-paused"],
                           what="the recovered message")
    assert recovered[0]["verified"] and recovered[0]["body"]["event_type"] == "collection.created"

    deleted = client.webhooks.delete_subscription(subscription.id)
    assert isinstance(deleted, sdk.WebhookSubscription) and deleted.id == subscription.id
    assert client.webhooks.get_subscriptions() == []
    for readable_id in ("hooked-handbook", "made-while-paused"):
        client.collections.delete(readable_id)
