"""The rules around the endpoint: handshakes, refusals (404, 401, 400, never a 500), the debounce
(a burst is one run; a running job gets one follow-up, never more), the settings API, rotation."""
from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
import responses
from rest_framework.test import APIClient

from airweave.collections.models import SourceConnection, Sync, SyncJob
from connectors.notifications.services import notification_follow_up, notification_path
from connectors.sync.jobs import S, sync_job_create, sync_job_transition
from tests.connectors import test_github as github_fake
from tests.connectors.saas_cases import connect
from tests.notifications import vendor_calls

GITHUB_SECRET = "It's a Secret to Everybody"
ISSUE_EVENT = {"action": "edited", "issue": {"number": 187}, "repository": {"full_name": "ossani24/github3.py"}}


@pytest.fixture(autouse=True)
def no_debounce(settings):
    settings.AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS = 0


@pytest.fixture
def vendor():
    return APIClient()


def _github(make_collection, client, secret=GITHUB_SECRET):
    connection = connect(make_collection(), "github", {"personal_access_token": "ghp_test"},
                         config={"repositories": ["ossani24/github3.py"]})
    if secret:
        r = client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": secret}, format="json")
        assert r.status_code == 200, r.content
    connection.refresh_from_db()
    return connection


def _post(vendor, path, headers_body, **extra):
    headers, body = headers_body
    return vendor.post(path, body, content_type="application/json",
                       headers={**{k: v for k, v in headers.items() if k != "Content-Type"}, **extra})


def _jobs(connection):
    return SyncJob.objects.filter(source_connection=connection).count()


# --- refusals --------------------------------------------------------------------------------------
def test_a_wrong_token_or_id_is_404_and_the_right_url_without_a_secret_is_401(make_collection, client, vendor):
    connection = _github(make_collection, client, secret=None)
    call = vendor_calls.github(GITHUB_SECRET, ISSUE_EVENT)
    assert _post(vendor, f"/source-connections/{connection.id}/notify/not-the-token", call).status_code == 404
    other = "/source-connections/00000000-0000-4000-8000-000000000000/notify/" + connection.notify_token
    assert _post(vendor, other, call).status_code == 404
    r = _post(vendor, notification_path(connection), call)
    assert r.status_code == 401 and "signing secret" in r.json()["detail"]
    assert _jobs(connection) == 0


def test_a_source_without_notifications_is_404(make_collection, vendor, tmp_path):
    connection = connect(make_collection(), "local_files", {}, config={"path": str(tmp_path)})
    r = vendor.post(notification_path(connection), b"{}", content_type="application/json")
    assert r.status_code == 404 and "no change notifications" in r.json()["detail"]


def test_a_stale_slack_timestamp_is_refused_as_a_replay(make_collection, client, vendor):
    connection = connect(make_collection(), "slack", {"access_token": "xoxp-test"})
    client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "s3cr3t-slack"}, format="json")
    old = vendor_calls.slack("s3cr3t-slack", {"type": "event_callback", "event": {"type": "message"}},
                             timestamp=int(time.time()) - 600)
    r = _post(vendor, notification_path(connection), old)
    assert r.status_code == 401 and "old" in r.json()["detail"] and _jobs(connection) == 0


def test_a_stale_linear_webhook_timestamp_is_refused(make_collection, client, vendor):
    connection = connect(make_collection(), "linear", {"api_key": "lin_api_test"})
    client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "lin_wh_x"}, format="json")
    old = vendor_calls.linear("lin_wh_x", {"action": "update", "type": "Issue", "data": {"id": "x"}},
                              timestamp_ms=int((time.time() - 120) * 1000))
    assert _post(vendor, notification_path(connection), old).status_code == 401


def test_an_unsigned_body_that_is_not_json_is_401_not_400(make_collection, client, vendor):
    connection = connect(make_collection(), "slack", {"access_token": "xoxp-test"})
    client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "s3cr3t-slack"}, format="json")
    r = vendor.post(notification_path(connection), b"<html>", content_type="text/html")
    assert r.status_code == 401 and _jobs(connection) == 0


def test_a_signed_body_that_is_not_json_is_400(make_collection, client, vendor):
    connection = _github(make_collection, client)
    body = b"not json"
    signature = "sha256=" + hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    r = vendor.post(notification_path(connection), body, content_type="application/json",
                    headers={"X-Hub-Signature-256": signature, "X-GitHub-Event": "issues"})
    assert r.status_code == 400 and _jobs(connection) == 0


def test_a_connection_waiting_for_authentication_is_not_synced(make_collection, client, vendor):
    connection = _github(make_collection, client)
    SourceConnection.objects.filter(pk=connection.pk).update(is_authenticated=False, status="needs_reauth")
    r = _post(vendor, notification_path(connection), vendor_calls.github(GITHUB_SECRET, ISSUE_EVENT))
    assert (r.status_code, r.json()["status"]) == (200, "ignored") and _jobs(connection) == 0


# --- handshakes ------------------------------------------------------------------------------------
def test_github_ping_is_answered_and_syncs_nothing(make_collection, client, vendor):
    connection = _github(make_collection, client)
    r = _post(vendor, notification_path(connection), vendor_calls.github(GITHUB_SECRET, {"zen": "Keep it simple."},
                                                                         event="ping"))
    assert r.status_code == 200 and r.json()["status"] == "ignored" and _jobs(connection) == 0


def test_slack_url_verification_answers_the_challenge(make_collection, client, vendor):
    connection = connect(make_collection(), "slack", {"access_token": "xoxp-test"})
    client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "s3cr3t-slack"}, format="json")
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    r = _post(vendor, notification_path(connection), vendor_calls.slack(
        "s3cr3t-slack", {"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"}))
    assert r.status_code == 200 and r.content.decode() == challenge and _jobs(connection) == 0
    forged = vendor_calls.forge(vendor_calls.slack("s3cr3t-slack", {"challenge": challenge, "type": "url_verification"})[0])
    assert _post(vendor, notification_path(connection), (forged, json.dumps(
        {"challenge": challenge, "type": "url_verification"}, separators=(",", ":")).encode())).status_code == 401


def test_asana_handshake_keeps_the_first_secret(make_collection, vendor):
    connection = connect(make_collection(), "asana", {"personal_access_token": "2/1201/1207:abc"})
    path = notification_path(connection)
    assert vendor.post(path, b"", content_type="application/json", HTTP_X_HOOK_SECRET="first-secret")["X-Hook-Secret"] == "first-secret"
    # A second handshake (someone else's, or a new webhook while a secret is set) is refused and replaces nothing.
    assert vendor.post(path, b"", content_type="application/json", HTTP_X_HOOK_SECRET="second-secret").status_code == 401
    heartbeat = vendor_calls.asana("first-secret", {"events": []})
    r = _post(vendor, path, heartbeat)
    assert r.status_code == 200 and r.json()["status"] == "ignored"
    assert _post(vendor, path, vendor_calls.asana("second-secret", {"events": []})).status_code == 401


def test_trello_head_and_notion_verification_token(make_collection, client, vendor):
    trello = connect(make_collection(), "trello", {"api_key": "e1a2b3c4d5e6f70812a3b4c5d6e7f809", "token": "ATTA9f8e7d6c"})
    assert vendor.head(notification_path(trello)).status_code == 200
    notion = connect(make_collection("wiki"), "notion", {"integration_secret": "ntn_test"})
    r = vendor.post(notification_path(notion), {"verification_token": "secret_abc123"}, format="json")
    assert r.status_code == 200
    assert client.get(f"/source-connections/{notion.id}/notifications").json()["secret_set"] is True


# --- the debounce ----------------------------------------------------------------------------------
def test_a_burst_lands_in_the_pending_job_and_a_running_job_gets_one_follow_up(make_collection, client, vendor):
    connection = _github(make_collection, client)
    path = notification_path(connection)
    job = sync_job_create(sync=connection.sync)  # a job waits for a worker (its debounce window)
    for _ in range(3):
        r = _post(vendor, path, vendor_calls.github(GITHUB_SECRET, ISSUE_EVENT))
        assert (r.status_code, r.json()) == (200, {"status": "coalesced", "job_id": str(job.id)})
    assert _jobs(connection) == 1

    sync_job_transition(job, S.RUNNING)  # now it lists: what changes from here on needs one more run
    for _ in range(3):
        assert _post(vendor, path, vendor_calls.github(GITHUB_SECRET, ISSUE_EVENT)).json()["status"] == "follow_up"
    assert Sync.objects.get(pk=connection.sync.pk).notify_follow_up is True
    assert notification_follow_up(sync_id=connection.sync.pk) is None  # not while the job still runs
    sync_job_transition(job, S.COMPLETED)

    with responses.RequestsMock() as rsps:  # the follow-up run, inline here (tasks run synchronously in tests)
        github_fake.add_repository(rsps, "ossani24/github3.py")
        rsps.add("GET", "https://api.github.com/repos/ossani24/github3.py/issues", json=[])
        follow_up = notification_follow_up(sync_id=connection.sync.pk)
    assert follow_up is not None and _jobs(connection) == 2
    assert SyncJob.objects.get(pk=follow_up.pk).status == "completed"
    assert notification_follow_up(sync_id=connection.sync.pk) is None  # one follow-up, never more
    assert _jobs(connection) == 2


# --- settings API ----------------------------------------------------------------------------------
def test_settings_show_the_url_and_are_scoped_to_the_organization(make_collection, client, other_client):
    connection = _github(make_collection, client, secret=None)
    body = client.get(f"/source-connections/{connection.id}/notifications").json()
    assert body == {"supported": True, "vendor": "GitHub webhooks", "secret_origin": "chosen", "secret_set": False,
                    "url": f"http://testserver{notification_path(connection)}", "last_notified_at": None,
                    "manages_subscription": False, "subscription": None}
    assert other_client.get(f"/source-connections/{connection.id}/notifications").status_code == 404
    assert other_client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "x"},
                            format="json").status_code == 404
    stored = SourceConnection.objects.get(pk=connection.pk)
    client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "topsecret"}, format="json")
    stored.refresh_from_db()
    assert stored.encrypted_notify_secret and "topsecret" not in stored.encrypted_notify_secret  # encrypted at rest


def test_a_source_without_notifications_refuses_a_secret_with_422(make_collection, client, tmp_path):
    connection = connect(make_collection(), "local_files", {}, config={"path": str(tmp_path)})
    r = client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": "x"}, format="json")
    assert r.status_code == 422 and "no change notifications" in json.dumps(r.json())
    assert client.get(f"/source-connections/{connection.id}/notifications").json()["supported"] is False


def test_rotating_the_token_retires_the_old_url(make_collection, client, vendor):
    connection = _github(make_collection, client)
    old = notification_path(connection)
    new_url = client.post(f"/source-connections/{connection.id}/notifications/rotate").json()["url"]
    assert new_url.removeprefix("http://testserver") != old
    ping = vendor_calls.github(GITHUB_SECRET, {"zen": "hi"}, event="ping")
    assert _post(vendor, old, ping).status_code == 404
    assert _post(vendor, new_url.removeprefix("http://testserver"), ping).status_code == 200


def test_sources_that_notify_declare_supports_continuous(client):
    assert client.get("/sources/slack").json()["supports_continuous"] is True
    assert client.get("/sources/local_files").json()["supports_continuous"] is False


def test_a_scheduled_or_api_job_that_ends_runs_the_follow_up_notifications_asked_for(make_collection, client):
    from connectors.sync.services import sync_job_start
    from connectors.sync.tasks import run_sync_job

    connection = _github(make_collection, client)
    job = sync_job_start(source_connection=connection, enqueue=False)
    Sync.objects.filter(pk=connection.sync.pk).update(notify_follow_up=True)  # a notification came while it ran
    with responses.RequestsMock() as rsps:
        github_fake.add_repository(rsps, "ossani24/github3.py")
        rsps.add("GET", "https://api.github.com/repos/ossani24/github3.py/issues", json=[])
        assert run_sync_job(str(job.id)) == "completed"
    assert _jobs(connection) == 2 and Sync.objects.get(pk=connection.sync.pk).notify_follow_up is False
    assert set(SyncJob.objects.filter(source_connection=connection).values_list("status", flat=True)) == {"completed"}
