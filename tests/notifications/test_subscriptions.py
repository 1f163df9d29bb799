"""Subscriptions this server makes (Microsoft Graph for OneDrive), against Graph's documented
answers served by `responses`: created with the notification URL and a generated clientState,
renewed by the hourly schedule when they near their end, removed with the connection, and a
refusal answered 422."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
import responses
from django.utils import timezone
from django_q.models import Schedule

from airweave.collections.models import SourceConnection
from connectors.notifications.services import (RENEWAL_SCHEDULE, ensure_renewal_schedule, notification_path,
                                               notification_secret_get, notification_subscriptions_renew)
from tests.connectors.saas_cases import connect

GRAPH = "https://graph.microsoft.com/v1.0"
SUB = "7f105c7d-2dc5-4530-97cd-4e7ae6534c07"
TOKEN = {"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"}


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def created(rsps, expires="2026-12-05T11:00:00.0000000Z"):
    def answer(request):
        body = json.loads(request.body)
        return 201, {}, json.dumps({"id": SUB, "resource": body["resource"], "changeType": body["changeType"],
                                    "clientState": body["clientState"], "notificationUrl": body["notificationUrl"],
                                    "expirationDateTime": expires})

    return rsps.add_callback("POST", f"{GRAPH}/subscriptions", callback=answer)


def test_subscribing_sends_the_url_and_a_generated_client_state(rsps, make_collection, client):
    connection = connect(make_collection(), "onedrive", dict(TOKEN))
    created(rsps)
    r = client.post(f"/source-connections/{connection.id}/notifications/subscription")
    assert r.status_code == 200, r.content
    sent = json.loads(rsps.calls[0].request.body)
    connection.refresh_from_db()
    assert sent["notificationUrl"] == f"http://testserver{notification_path(connection)}"
    assert sent["resource"] == "/me/drive/root" and sent["changeType"] == "updated"
    assert sent["clientState"] == notification_secret_get(connection) and len(sent["clientState"]) >= 40
    assert rsps.calls[0].request.headers["Authorization"] == f"Bearer {TOKEN['access_token']}"
    assert r.json()["subscription"] == {"id": SUB, "expires_at": "2026-12-05T11:00:00.0000000Z"}
    assert r.json()["manages_subscription"] is True and r.json()["secret_set"] is True


def test_the_schedule_renews_only_what_nears_its_end(rsps, make_collection, client):
    soon = connect(make_collection(), "onedrive", dict(TOKEN))
    later = connect(make_collection("later"), "onedrive", dict(TOKEN))
    end_soon = (timezone.now() + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
    end_later = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%S.0000000Z")
    for connection, expires in ((soon, end_soon), (later, end_later)):
        SourceConnection.objects.filter(pk=connection.pk).update(
            notify_subscription={"id": f"sub-{connection.pk}", "expires_at": expires, "url": "https://x.example/n"})
    patch = rsps.add("PATCH", f"{GRAPH}/subscriptions/sub-{soon.pk}",
                     json={"id": f"sub-{soon.pk}", "expirationDateTime": "2026-12-09T11:00:00.0000000Z"})
    assert notification_subscriptions_renew() == 1
    assert patch.call_count == 1 and "expirationDateTime" in json.loads(patch.calls[0].request.body)
    soon.refresh_from_db()
    assert soon.notify_subscription["expires_at"] == "2026-12-09T11:00:00.0000000Z"
    ensure_renewal_schedule()
    schedule = Schedule.objects.get(name=RENEWAL_SCHEDULE)
    assert (schedule.func, schedule.schedule_type) == ("connectors.sync.tasks.renew_notification_subscriptions", "H")


def test_a_failed_renewal_is_left_to_expire_and_stops_no_other(rsps, make_collection):
    connection = connect(make_collection(), "onedrive", dict(TOKEN))
    SourceConnection.objects.filter(pk=connection.pk).update(notify_subscription={
        "id": "gone", "expires_at": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"), "url": "https://x.example/n"})
    rsps.add("PATCH", f"{GRAPH}/subscriptions/gone", status=404,
             json={"error": {"code": "ResourceNotFound", "message": "The object was not found."}})
    assert notification_subscriptions_renew() == 0


def test_deleting_the_connection_removes_its_subscription(rsps, make_collection, client):
    connection = connect(make_collection(), "onedrive", dict(TOKEN))
    created(rsps)
    client.post(f"/source-connections/{connection.id}/notifications/subscription")
    delete = rsps.add("DELETE", f"{GRAPH}/subscriptions/{SUB}", status=204)
    assert client.delete(f"/source-connections/{connection.id}").status_code == 200
    assert delete.call_count == 1 and not SourceConnection.objects.filter(pk=connection.pk).exists()


def test_a_refusal_is_422_and_sources_without_subscriptions_say_so(rsps, make_collection, client):
    connection = connect(make_collection(), "onedrive", dict(TOKEN))
    rsps.add("POST", f"{GRAPH}/subscriptions", status=400, json={"error": {
        "code": "InvalidRequest", "message": "Subscription validation request failed. Notification endpoint must "
                                             "respond with 200 OK to validation request."}})
    r = client.post(f"/source-connections/{connection.id}/notifications/subscription")
    assert r.status_code == 422 and "refused" in json.dumps(r.json())
    connection.refresh_from_db()
    assert connection.notify_subscription is None
    github = connect(make_collection("gh"), "github", {"personal_access_token": "ghp_test"},
                     config={"repositories": ["octocat/Hello-World"]})
    r = client.post(f"/source-connections/{github.id}/notifications/subscription")
    assert r.status_code == 422 and "register the notification URL" in json.dumps(r.json())


DRIVE = "https://www.googleapis.com/drive/v3"


def test_a_drive_channel_is_replaced_before_it_ends_and_the_old_one_stopped(rsps, make_collection):
    connection = connect(make_collection(), "google_drive", {"access_token": "ya29.a0-test"})
    SourceConnection.objects.filter(pk=connection.pk).update(notify_subscription={
        "id": "old-channel", "resource_id": "res-1", "url": "https://x.example/n",
        "expires_at": (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")})
    from connectors.notifications.services import notification_secret_set

    notification_secret_set(source_connection=connection, secret="channel-token-1")
    rsps.add("GET", f"{DRIVE}/changes/startPageToken", json={"kind": "drive#startPageToken", "startPageToken": "5020"})
    watch = rsps.add_callback("POST", f"{DRIVE}/changes/watch", callback=lambda request: (200, {}, json.dumps({
        "kind": "api#channel", "id": json.loads(request.body)["id"], "resourceId": "res-2",
        "expiration": str(json.loads(request.body)["expiration"])})))
    stop = rsps.add("POST", f"{DRIVE}/channels/stop", status=204)
    assert notification_subscriptions_renew() == 1
    sent = json.loads(watch.calls[0].request.body)
    assert (sent["type"], sent["address"], sent["token"]) == ("web_hook", "https://x.example/n", "channel-token-1")
    assert "pageToken=5020" in watch.calls[0].request.url
    assert json.loads(stop.calls[0].request.body) == {"id": "old-channel", "resourceId": "res-1"}
    connection.refresh_from_db()
    assert connection.notify_subscription["id"] == sent["id"] and connection.notify_subscription["resource_id"] == "res-2"
