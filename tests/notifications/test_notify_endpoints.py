"""Change notifications end to end, for fourteen sources: sync against the vendor's fake, edit an item
in the fake, POST the vendor's signed notification to the connection's public URL, and the edit
is found by search with no scheduled run; a forged signature answers 401 and syncs nothing."""
from __future__ import annotations

import json

import pytest
import responses
from rest_framework.test import APIClient

from airweave.collections.models import SyncJob
from tests.connectors.lifecycle import entity_text, search_ids
from tests.connectors.saas_cases import connect, run_sync
from tests.notifications.cases import CASES
from tests.notifications.vendor_calls import forge


@pytest.fixture(autouse=True)
def no_debounce(settings):
    settings.AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS = 0


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:  # fakes answer more than one run asks
        yield mock


def notification_url(client, connection) -> tuple[str, str]:
    """(the full URL the settings endpoint tells the user to register, its path)."""
    r = client.get(f"/source-connections/{connection.id}/notifications")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["supported"] is True and body["url"].startswith("http://testserver/")
    return body["url"], body["url"].removeprefix("http://testserver")


def set_secret(client, connection, case, vendor: APIClient, path: str, rsps) -> str:
    if case.subscription is not None:  # this server subscribes; the vendor echoes the secret it was given
        case.subscription(rsps)
        r = client.post(f"/source-connections/{connection.id}/notifications/subscription")
        assert r.status_code == 200 and r.json()["subscription"]["id"], r.content
        sent = json.loads(rsps.calls[-1].request.body)
        assert (sent.get("notificationUrl") or sent.get("address")) == r.json()["url"]
        return sent.get("clientState") or sent.get("token")
    if case.handshake is not None:
        return case.handshake(vendor, path)
    r = client.put(f"/source-connections/{connection.id}/notifications", {"signing_secret": case.secret},
                   format="json")
    assert r.status_code == 200 and r.json()["secret_set"] is True, r.content
    return case.secret


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_signed_notification_makes_the_edit_searchable_and_a_forged_one_is_refused(
        case, rsps, make_collection, client, monkeypatch):
    if case.patches:
        case.patches(monkeypatch)
    collection = make_collection()
    connection = connect(collection, case.short_name, case.credentials, config=case.config)
    case.first_sync(rsps)
    assert run_sync(connection).status == "completed"
    assert case.phrase not in entity_text(connection, case.entity_id)

    vendor = APIClient()  # the vendor's calls carry no API key
    url, path = notification_url(client, connection)
    secret = set_secret(client, connection, case, vendor, path, rsps)
    rsps.reset()
    case.edit(rsps)  # the fake now answers the incremental run with the edited item
    headers, body = case.call(secret, url)
    jobs_before = SyncJob.objects.filter(source_connection=connection).count()

    wrong_headers, wrong_body = case.call("not-" + secret, url)  # signed by someone without the secret
    wrong = vendor.post(path, wrong_body, content_type="application/json",
                        headers={k: v for k, v in wrong_headers.items() if k != "Content-Type"})
    assert wrong.status_code == 401, wrong.content
    if forge(headers) != headers:  # the vendor's own call with its signature altered
        tampered = vendor.post(path, body, content_type="application/json",
                               headers={k: v for k, v in forge(headers).items() if k != "Content-Type"})
        assert tampered.status_code == 401, tampered.content
    assert SyncJob.objects.filter(source_connection=connection).count() == jobs_before
    assert case.phrase not in entity_text(connection, case.entity_id)

    r = vendor.post(path, body, content_type="application/json",
                    headers={k: v for k, v in headers.items() if k != "Content-Type"})
    assert r.status_code in (200, 202), r.content
    assert r.json()["status"] == "started"
    job = SyncJob.objects.get(pk=r.json()["job_id"])
    assert job.status == "completed" and not job.force_full_sync, (job.status, job.error)
    assert case.phrase in entity_text(connection, case.entity_id)
    assert case.entity_id in search_ids(client, collection, case.phrase, limit=5)
