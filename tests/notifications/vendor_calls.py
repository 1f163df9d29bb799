"""The vendors' side of change notifications: calls signed exactly as each vendor documents it.

Written from the vendors' documentation, independently of the product's verification code, so
a test that passes proves the product verifies what the vendor really sends:
- Slack: https://api.slack.com/authentication/verifying-requests-from-slack
- GitHub: https://docs.github.com/webhooks/using-webhooks/validating-webhook-deliveries
- Linear: https://linear.app/developers/webhooks#securing-webhooks
- Notion: https://developers.notion.com/reference/webhooks#step-3-validating-event-payloads-recommended
- Asana: https://developers.asana.com/docs/webhooks-guide#security
- Trello: https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/#webhook-signatures
- Zendesk: https://developer.zendesk.com/documentation/webhooks/verifying/
- Stripe: https://docs.stripe.com/webhooks#verify-manually
Each function returns (headers, body bytes) for one call; `url` is the URL the vendor calls.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import datetime, timezone


def _body(payload) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def slack(secret: str, payload: dict, *, timestamp: int | None = None) -> tuple[dict, bytes]:
    body = _body(payload)
    ts = str(int(time.time()) if timestamp is None else timestamp)
    basestring = f"v0:{ts}:".encode() + body
    signature = "v0=" + hmac.new(secret.encode(), basestring, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature, "Content-Type": "application/json"}, body


def github(secret: str, payload: dict, event: str = "issues") -> tuple[dict, bytes]:
    body = _body(payload)
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Hub-Signature-256": signature, "X-GitHub-Event": event, "X-GitHub-Delivery": "72d3162e-cc78-11e3",
            "Content-Type": "application/json"}, body


def linear(secret: str, payload: dict, *, timestamp_ms: int | None = None) -> tuple[dict, bytes]:
    payload = {**payload, "webhookTimestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms}
    body = _body(payload)
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"Linear-Signature": signature, "Linear-Event": payload.get("type", "Issue"),
            "Content-Type": "application/json"}, body


def notion(verification_token: str, payload: dict) -> tuple[dict, bytes]:
    body = _body(payload)
    signature = "sha256=" + hmac.new(verification_token.encode(), body, hashlib.sha256).hexdigest()
    return {"X-Notion-Signature": signature, "Content-Type": "application/json"}, body


def asana(secret: str, payload: dict) -> tuple[dict, bytes]:
    body = _body(payload)
    return {"X-Hook-Signature": hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json"}, body


def trello(app_secret: str, payload: dict, callback_url: str) -> tuple[dict, bytes]:
    body = _body(payload)
    digest = hmac.new(app_secret.encode(), body + callback_url.encode(), hashlib.sha1).digest()
    return {"X-Trello-Webhook": base64.b64encode(digest).decode(), "Content-Type": "application/json"}, body


def zendesk(secret: str, payload: dict, *, timestamp: str | None = None) -> tuple[dict, bytes]:
    body = _body(payload)
    ts = timestamp or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = hmac.new(secret.encode(), ts.encode() + body, hashlib.sha256).digest()
    return {"X-Zendesk-Webhook-Signature": base64.b64encode(digest).decode(),
            "X-Zendesk-Webhook-Signature-Timestamp": ts, "X-Zendesk-Webhook-Id": "01GXA8D0EXAMPLE",
            "Content-Type": "application/json"}, body


def stripe(secret: str, payload: dict, *, timestamp: int | None = None) -> tuple[dict, bytes]:
    body = _body(payload)
    t = str(int(time.time()) if timestamp is None else timestamp)
    v1 = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {"Stripe-Signature": f"t={t},v1={v1}", "Content-Type": "application/json"}, body


def gitlab(secret_token: str, payload: dict, event: str = "Issue Hook") -> tuple[dict, bytes]:
    """GitLab signs nothing: the webhook's secret token comes back in X-Gitlab-Token
    (https://docs.gitlab.com/user/project/integrations/webhooks/#create-a-webhook)."""
    return {"X-Gitlab-Event": event, "X-Gitlab-Token": secret_token, "Content-Type": "application/json"}, _body(payload)


def graph(client_state: str, subscription_id: str, resource: str) -> tuple[dict, bytes]:
    """Microsoft Graph signs nothing: each notification carries the subscription's clientState
    (https://learn.microsoft.com/graph/change-notifications-delivery-webhooks#notificationurl-validation)."""
    return {"Content-Type": "application/json"}, _body({"value": [{
        "subscriptionId": subscription_id, "clientState": client_state, "changeType": "updated",
        "resource": resource, "subscriptionExpirationDateTime": "2026-12-05T11:00:00.0000000Z",
        "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95"}]})


def drive(channel_token: str, channel_id: str, resource_id: str, state: str = "change",
          number: int = 2) -> tuple[dict, bytes]:
    """Google Drive push: no body, no signature; the channel's token comes back in X-Goog-Channel-Token
    (https://developers.google.com/workspace/drive/api/guides/push#understanding-drive-api-notification-events)."""
    return {"X-Goog-Channel-ID": channel_id, "X-Goog-Channel-Token": channel_token,
            "X-Goog-Channel-Expiration": "Tue, 08 Dec 2026 01:00:00 GMT", "X-Goog-Resource-ID": resource_id,
            "X-Goog-Resource-URI": "https://www.googleapis.com/drive/v3/changes?alt=json&pageToken=5012",
            "X-Goog-Resource-State": state, "X-Goog-Message-Number": str(number),
            "Content-Type": "application/json"}, b""


def box(primary_key: str, payload: dict, *, timestamp: str | None = None) -> tuple[dict, bytes]:
    """Box webhooks v2: base64(HMAC-SHA256(key, body + box-delivery-timestamp)) in box-signature-primary."""
    body = _body(payload)
    ts = timestamp or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    digest = hmac.new(primary_key.encode(), body + ts.encode(), hashlib.sha256).digest()
    return {"box-delivery-id": "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f", "box-delivery-timestamp": ts,
            "box-signature-algorithm": "HmacSHA256", "box-signature-version": "1",
            "box-signature-primary": base64.b64encode(digest).decode(), "Content-Type": "application/json"}, body


def dropbox(app_secret: str, payload: dict) -> tuple[dict, bytes]:
    """Dropbox webhooks: hex(HMAC-SHA256(app secret, body)) in X-Dropbox-Signature."""
    body = _body(payload)
    return {"X-Dropbox-Signature": hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json"}, body


def forge(headers: dict) -> dict:
    """The same headers with every signature-like value changed in its last character."""
    out = {}
    for name, value in headers.items():
        if "signature" in name.lower() or name.lower() in ("x-trello-webhook", "x-gitlab-token"):
            value = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
        out[name] = value
    return out
