"""The handlers of vendors whose sources are not wired to the endpoint yet (docs/notifications.md),
checked alone against calls signed as each vendor documents: Microsoft Graph, Google Drive,
Dropbox, Box, HubSpot, Atlassian."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from connectors.notifications.base import NotificationRejected, NotificationRequest
from connectors.notifications.vendors import (AtlassianNotifications, BoxNotifications, DropboxNotifications,
                                              GoogleDriveNotifications, HubSpotNotifications,
                                              MicrosoftGraphNotifications)

URL = "https://airweave.example/source-connections/9b1c/notify/tok"


def call(method="POST", headers=None, body=b"", query=None, url=URL):
    return NotificationRequest(method=method, url=url, headers={k.lower(): v for k, v in (headers or {}).items()},
                               body=body, query=query or {})


def test_graph_validation_token_is_echoed_and_client_state_checked():
    graph = MicrosoftGraphNotifications()
    reply = graph.handshake(call(query={"validationToken": "Validation: Testing client application"}), None).reply
    assert (reply.status, reply.body, reply.content_type) == (200, "Validation: Testing client application",
                                                              "text/plain")
    body = json.dumps({"value": [{"subscriptionId": "7f105c7d", "clientState": "s3cr3t", "changeType": "updated",
                                  "resource": "me/drive/root", "resourceData": {"id": "01BYE5RZ"}}]}).encode()
    graph.verify(call(body=body), "s3cr3t")
    assert graph.changes(call(body=body)).entity_ids == ["01BYE5RZ"] and graph.success_status == 202
    with pytest.raises(NotificationRejected):
        graph.verify(call(body=body), "another")


def test_drive_channel_token_and_the_sync_message():
    drive = GoogleDriveNotifications()
    headers = {"X-Goog-Channel-ID": "01234567-89ab", "X-Goog-Channel-Token": "tok-1", "X-Goog-Resource-State": "sync"}
    drive.verify(call(headers=headers), "tok-1")
    assert drive.changes(call(headers=headers)).changed is False
    assert drive.changes(call(headers={**headers, "X-Goog-Resource-State": "change"})).changed is True
    with pytest.raises(NotificationRejected):
        drive.verify(call(headers={**headers, "X-Goog-Channel-Token": "tok-2"}), "tok-1")


def test_dropbox_challenge_and_signature():
    dropbox = DropboxNotifications()
    reply = dropbox.handshake(call("GET", query={"challenge": "abc"}), None).reply
    assert reply.body == "abc" and reply.headers["X-Content-Type-Options"] == "nosniff"
    body = b'{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]}}'
    dropbox.verify(call(headers={"X-Dropbox-Signature": hmac.new(b"app-secret", body, hashlib.sha256).hexdigest()},
                        body=body), "app-secret")
    with pytest.raises(NotificationRejected):
        dropbox.verify(call(headers={"X-Dropbox-Signature": "00"}, body=body), "app-secret")


def test_box_primary_or_secondary_signature_and_the_ten_minute_window():
    box = BoxNotifications()
    body = b'{"type":"webhook_event","trigger":"FILE.UPLOADED","source":{"id":"12345","type":"file"}}'

    def headers(key, when):
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
        sig = base64.b64encode(hmac.new(key.encode(), body + stamp.encode(), hashlib.sha256).digest()).decode()
        return {"box-delivery-timestamp": stamp, "box-signature-primary": sig if key == "primary" else "x",
                "box-signature-secondary": sig if key == "secondary" else "x", "box-signature-version": "1",
                "box-signature-algorithm": "HmacSHA256"}

    now = datetime.now(timezone.utc)
    box.verify(call(headers=headers("primary", now), body=body), "primary")
    box.verify(call(headers=headers("secondary", now), body=body), "secondary")
    with pytest.raises(NotificationRejected):
        box.verify(call(headers=headers("primary", now - timedelta(minutes=11)), body=body), "primary")


def test_hubspot_v3_signature_over_method_uri_body_timestamp():
    hubspot = HubSpotNotifications()
    body = b'[{"objectId":1246965,"subscriptionType":"contact.propertyChange","propertyName":"email"}]'
    stamp = str(int(time.time() * 1000))
    message = b"POST" + URL.encode() + body + stamp.encode()
    sig = base64.b64encode(hmac.new(b"client-secret", message, hashlib.sha256).digest()).decode()
    hubspot.verify(call(headers={"X-HubSpot-Signature-v3": sig, "X-HubSpot-Request-Timestamp": stamp}, body=body),
                   "client-secret")
    with pytest.raises(NotificationRejected):
        hubspot.verify(call(headers={"X-HubSpot-Signature-v3": sig, "X-HubSpot-Request-Timestamp": stamp},
                            body=body, url=URL + "?x=1"), "client-secret")


def test_atlassian_admin_webhook_secret():
    atlassian = AtlassianNotifications()
    body = b'{"webhookEvent":"jira:issue_updated","issue":{"key":"PROJ-1"}}'
    atlassian.verify(call(headers={"X-Hub-Signature": "sha256=" + hmac.new(b"wh-secret", body, hashlib.sha256)
                                   .hexdigest()}, body=body), "wh-secret")
    with pytest.raises(NotificationRejected):
        atlassian.verify(call(headers={}, body=body), "wh-secret")
