"""One change-notification handler per vendor, each per the vendor's documented signing scheme.

Every signature is computed and compared by `connectors.notifications.signing` (constant-time).
A source adopts one with `@source(..., notifications=SlackNotifications)`.
"""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from connectors.http import HttpError
from connectors.notifications.base import (Changes, Handshake, NotificationBadRequest, NotificationHandler,
                                           NotificationRejected, NotificationReply)
from connectors.notifications.signing import hmac_base64, hmac_hex, require_fresh, require_match

FIVE_MINUTES = 300


def _ok(body: str = "", content_type: str = "text/plain", status: int = 200, **headers) -> NotificationReply:
    return NotificationReply(status=status, body=body, content_type=content_type, headers=headers)


def _json_or_none(request):
    """The body as JSON, or None when it is empty or not JSON (a handshake check must not fail on it)."""
    try:
        return request.json() if request.body else None
    except NotificationBadRequest:
        return None


def _object(value) -> dict:
    if not isinstance(value, dict):
        raise NotificationBadRequest("the body is not a JSON object")
    return value


class SlackNotifications(NotificationHandler):
    """Slack Events API: `X-Slack-Signature: v0=hex(HMAC-SHA256(signing secret, "v0:{ts}:{body}"))`,
    `X-Slack-Request-Timestamp` within 5 minutes; the `url_verification` call (signed too) is
    answered with its `challenge`."""

    vendor = "Slack Events API"

    def verify(self, request, secret):
        timestamp = request.header("x-slack-request-timestamp")
        require_fresh(timestamp, tolerance=FIVE_MINUTES)
        expected = "v0=" + hmac_hex(secret, b"v0:" + timestamp.encode() + b":" + request.body)
        require_match(request.header("x-slack-signature"), expected)

    def handshake(self, request, secret):
        body = _json_or_none(request)
        if isinstance(body, dict) and body.get("type") == "url_verification":
            if secret:  # Slack signs the verification call too
                self.verify(request, secret)
            return Handshake(_ok(str(body.get("challenge", ""))))
        return None

    def changes(self, request):
        body = _object(request.json())
        event = body.get("event") or {}
        if body.get("type") != "event_callback":
            return Changes(changed=False)
        ids = [v for v in (event.get("channel"), event.get("item", {}).get("channel")) if isinstance(v, str)]
        return Changes(entity_ids=ids)


class GitHubNotifications(NotificationHandler):
    """GitHub webhooks: `X-Hub-Signature-256: sha256=hex(HMAC-SHA256(secret, body))`; the secret is
    the one typed into the webhook's settings. `ping` events sync nothing."""

    vendor = "GitHub webhooks"
    secret_origin = "chosen"

    def verify(self, request, secret):
        require_match(request.header("x-hub-signature-256"), "sha256=" + hmac_hex(secret, request.body))

    def changes(self, request):
        if request.header("x-github-event") == "ping":
            return Changes(changed=False)
        body = _object(request.json())
        item = body.get("issue") or body.get("pull_request") or {}
        return Changes(entity_ids=[str(item["number"])] if "number" in item else [])


class GitLabNotifications(NotificationHandler):
    """GitLab webhooks: the webhook's secret token comes back verbatim in `X-Gitlab-Token` (GitLab
    does not sign the body; the token is compared in constant time)."""

    vendor = "GitLab webhooks"
    secret_origin = "chosen"

    def verify(self, request, secret):
        require_match(request.header("x-gitlab-token"), secret, what="X-Gitlab-Token")

    def changes(self, request):
        body = _object(request.json())
        attributes = body.get("object_attributes") or {}
        path = (body.get("project") or {}).get("path_with_namespace")
        sign = {"issue": "#", "merge_request": "!"}.get(body.get("object_kind"))
        ids = [f"{path}{sign}{attributes['iid']}"] if path and sign and "iid" in attributes else []
        return Changes(entity_ids=ids)


class LinearNotifications(NotificationHandler):
    """Linear webhooks: `Linear-Signature: hex(HMAC-SHA256(signing secret, body))` and the body's
    `webhookTimestamp` (milliseconds) within a minute, as Linear advises."""

    vendor = "Linear webhooks"

    def verify(self, request, secret):
        require_match(request.header("linear-signature"), hmac_hex(secret, request.body))
        body = _object(request.json())
        stamp = body.get("webhookTimestamp")
        require_fresh(stamp / 1000 if isinstance(stamp, (int, float)) else None, tolerance=60,
                      what="webhookTimestamp")

    def changes(self, request):
        data = _object(request.json()).get("data") or {}
        return Changes(entity_ids=[data["id"]] if isinstance(data.get("id"), str) else [])


class NotionNotifications(NotificationHandler):
    """Notion webhooks: the subscription's first call carries `verification_token` (learned here,
    then pasted into Notion to verify the subscription); events carry
    `X-Notion-Signature: sha256=hex(HMAC-SHA256(verification_token, body))`."""

    vendor = "Notion webhooks"
    secret_origin = "handshake"

    def handshake(self, request, secret):
        body = _json_or_none(request)
        if isinstance(body, dict) and set(body) == {"verification_token"}:
            return Handshake(_ok('{"ok": true}', "application/json"), secret=str(body["verification_token"]))
        return None

    def verify(self, request, secret):
        require_match(request.header("x-notion-signature"), "sha256=" + hmac_hex(secret, request.body))

    def changes(self, request):
        entity = _object(request.json()).get("entity") or {}
        return Changes(entity_ids=[entity["id"]] if isinstance(entity.get("id"), str) else [])


class AsanaNotifications(NotificationHandler):
    """Asana webhooks: the handshake sends `X-Hook-Secret`, echoed back in the same header and kept;
    events carry `X-Hook-Signature: hex(HMAC-SHA256(secret, body))`. An empty `events` list is a
    heartbeat."""

    vendor = "Asana webhooks"
    secret_origin = "handshake"

    def handshake(self, request, secret):
        hook_secret = request.header("x-hook-secret")
        if hook_secret:
            return Handshake(_ok(**{"X-Hook-Secret": hook_secret}), secret=hook_secret)
        return None

    def verify(self, request, secret):
        require_match(request.header("x-hook-signature"), hmac_hex(secret, request.body))

    def changes(self, request):
        events = _object(request.json()).get("events") or []
        ids = [e["resource"]["gid"] for e in events if isinstance(e, dict) and isinstance(e.get("resource"), dict)
               and "gid" in e["resource"]]
        return Changes(changed=bool(events), entity_ids=ids, events=len(events))


class TrelloNotifications(NotificationHandler):
    """Trello webhooks: `HEAD` when the webhook is created (answered 200); calls carry
    `X-Trello-Webhook: base64(HMAC-SHA1(app secret, body + callbackURL))`, the callback URL being
    exactly the URL registered. The app secret defaults to the connection's `consumer_secret`."""

    vendor = "Trello webhooks"

    def handshake(self, request, secret):
        if request.method in ("HEAD", "GET"):
            return Handshake(_ok())
        return None

    def verify(self, request, secret):
        expected = hmac_base64(secret, request.body + request.url.encode(), algorithm="sha1")
        require_match(request.header("x-trello-webhook"), expected)

    def changes(self, request):
        data = (_object(request.json()).get("action") or {}).get("data") or {}
        card = data.get("card") or {}
        return Changes(entity_ids=[card["id"]] if isinstance(card.get("id"), str) else [])

    def default_secret(self, credentials):
        return credentials.get("consumer_secret") or None


class ZendeskNotifications(NotificationHandler):
    """Zendesk webhooks: `X-Zendesk-Webhook-Signature: base64(HMAC-SHA256(signing secret, timestamp + body))`
    with `X-Zendesk-Webhook-Signature-Timestamp` (checked within 5 minutes)."""

    vendor = "Zendesk webhooks"

    def verify(self, request, secret):
        timestamp = request.header("x-zendesk-webhook-signature-timestamp") or ""
        expected = hmac_base64(secret, timestamp.encode() + request.body)
        require_match(request.header("x-zendesk-webhook-signature"), expected)
        try:
            seconds = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise NotificationRejected("the signature timestamp is not an ISO-8601 date-time") from None
        require_fresh(seconds, tolerance=FIVE_MINUTES)

    def changes(self, request):
        detail = _object(request.json()).get("detail") or {}
        return Changes(entity_ids=[str(detail["id"])] if "id" in detail else [])


class StripeNotifications(NotificationHandler):
    """Stripe webhooks: `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(whsec secret, "t.body")>[,v1=...]`
    with `t` within 5 minutes (Stripe's own default tolerance)."""

    vendor = "Stripe webhooks"

    def verify(self, request, secret):
        parts: dict[str, list[str]] = {}
        for item in (request.header("stripe-signature") or "").split(","):
            key, _, value = item.strip().partition("=")
            parts.setdefault(key, []).append(value)
        timestamp = (parts.get("t") or [""])[0]
        require_fresh(timestamp, tolerance=FIVE_MINUTES)
        expected = hmac_hex(secret, timestamp.encode() + b"." + request.body)
        for received in parts.get("v1") or [""]:
            try:
                require_match(received, expected)
                return
            except NotificationRejected:
                continue
        raise NotificationRejected("no v1 signature matches")

    def changes(self, request):
        obj = ((_object(request.json()).get("data") or {}).get("object") or {})
        return Changes(entity_ids=[obj["id"]] if isinstance(obj.get("id"), str) else [])


class MicrosoftGraphNotifications(NotificationHandler):
    """Microsoft Graph change notifications: a `validationToken` query parameter is echoed as
    text/plain (within Graph's 10 s); each notification's `clientState` must equal the secret the
    subscription was created with. Accepted calls answer 202.

    Subscriptions: `POST /subscriptions` on `resource` for `change_type`, living `lifetime_minutes`
    (under Graph's maximum for the resource), renewed with `PATCH /subscriptions/{id}`, removed with
    `DELETE /subscriptions/{id}`. Subclasses name the resource of their source.
    """

    vendor = "Microsoft Graph subscriptions"
    secret_origin = "product"
    success_status = 202
    manages_subscriptions = True
    resource = ""
    change_type = "updated"
    lifetime_minutes = 3 * 24 * 60

    def _expiry(self) -> str:
        return (datetime.now(timezone.utc) + timedelta(minutes=self.lifetime_minutes)).strftime(
            "%Y-%m-%dT%H:%M:%S.0000000Z")

    def subscribe(self, source, *, url, secret):
        body = source.http.post("/subscriptions", json={
            "changeType": self.change_type, "notificationUrl": url, "resource": self.resource,
            "expirationDateTime": self._expiry(), "clientState": secret}).json()
        return {"id": body["id"], "expires_at": body["expirationDateTime"], "resource": body.get("resource")}

    def renew(self, source, subscription, *, url, secret):
        body = source.http.request("PATCH", f"/subscriptions/{subscription['id']}",
                                   json={"expirationDateTime": self._expiry()}).json()
        return {**subscription, "expires_at": body["expirationDateTime"]}

    def unsubscribe(self, source, subscription):
        try:
            source.http.request("DELETE", f"/subscriptions/{subscription['id']}")
        except HttpError as exc:
            if exc.status != 404:  # already gone (expired, or removed at Microsoft)
                raise

    def handshake(self, request, secret):
        token = request.query.get("validationToken")
        if token is not None:
            return Handshake(_ok(token))
        return None

    def verify(self, request, secret):
        values = _object(request.json()).get("value")
        if not isinstance(values, list) or not values:
            raise NotificationRejected("no notifications in the body")
        for item in values:
            require_match(str((item or {}).get("clientState") or ""), secret, what="clientState")

    def changes(self, request):
        values = request.json()["value"]
        ids = [v["resourceData"]["id"] for v in values if isinstance(v.get("resourceData"), dict)
               and "id" in v["resourceData"]]
        return Changes(entity_ids=ids, events=len(values))


class OneDriveNotifications(MicrosoftGraphNotifications):
    """Graph subscriptions on the signed-in user's drive root (driveItem: `updated` only; Graph allows
    up to 42,300 minutes, we ask 3 days and renew a day before)."""

    vendor = "Microsoft Graph subscriptions (OneDrive)"
    resource = "/me/drive/root"


class OutlookMailNotifications(MicrosoftGraphNotifications):
    """Graph subscriptions on the signed-in user's messages, every folder (`created,updated,deleted`;
    Graph allows up to 10,080 minutes for messages, we ask 3 days and renew a day before)."""

    vendor = "Microsoft Graph subscriptions (Outlook mail)"
    resource = "/me/messages"
    change_type = "created,updated,deleted"


class OutlookCalendarNotifications(MicrosoftGraphNotifications):
    """Graph subscriptions on the signed-in user's events (`created,updated,deleted`; Graph allows up
    to 10,080 minutes for events, we ask 3 days and renew a day before)."""

    vendor = "Microsoft Graph subscriptions (Outlook calendar)"
    resource = "/me/events"
    change_type = "created,updated,deleted"


class GoogleDriveNotifications(NotificationHandler):
    """Google Drive `changes.watch` channels: `X-Goog-Channel-Token` must equal the channel's token;
    `X-Goog-Resource-State: sync` (the channel's first message) syncs nothing.

    Channels: `changes.getStartPageToken`, then `POST changes/watch?pageToken=` with a new channel
    id, this URL and the token, for `lifetime_seconds` (Drive allows a week for changes). Channels
    cannot be extended: renewal opens a new one, then stops the old (`POST channels/stop`).
    """

    vendor = "Google Drive push channels"
    secret_origin = "product"
    manages_subscriptions = True
    lifetime_seconds = 7 * 24 * 3600 - 3600
    renew_within_seconds = 24 * 3600

    def subscribe(self, source, *, url, secret):
        params = {"supportsAllDrives": "true"}
        token = source.http.get_json("changes/startPageToken", params=params)["startPageToken"]
        expiration = int((datetime.now(timezone.utc).timestamp() + self.lifetime_seconds) * 1000)
        body = source.http.post("changes/watch", params={**params, "pageToken": token,
                                                         "includeItemsFromAllDrives": "true"},
                                json={"id": str(uuid.uuid4()), "type": "web_hook", "address": url, "token": secret,
                                      "expiration": expiration}).json()
        expires = datetime.fromtimestamp(int(body.get("expiration") or expiration) / 1000, timezone.utc)
        return {"id": body["id"], "resource_id": body["resourceId"],
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}

    def renew(self, source, subscription, *, url, secret):
        fresh = self.subscribe(source, url=url, secret=secret)
        try:
            self.unsubscribe(source, subscription)
        except HttpError:
            pass  # the old channel expires on its own; its calls still carry the same token
        return fresh

    def unsubscribe(self, source, subscription):
        try:
            source.http.post("channels/stop", json={"id": subscription["id"], "resourceId": subscription["resource_id"]})
        except HttpError as exc:
            if exc.status != 404:
                raise

    def verify(self, request, secret):
        require_match(request.header("x-goog-channel-token"), secret, what="channel token")

    def changes(self, request):
        return Changes(changed=request.header("x-goog-resource-state") != "sync")


class DropboxNotifications(NotificationHandler):
    """Dropbox webhooks: `GET ?challenge=` echoed as text/plain; calls carry
    `X-Dropbox-Signature: hex(HMAC-SHA256(app secret, body))`."""

    vendor = "Dropbox webhooks"

    def handshake(self, request, secret):
        if request.method == "GET" and "challenge" in request.query:
            return Handshake(_ok(request.query["challenge"], **{"X-Content-Type-Options": "nosniff"}))
        return None

    def verify(self, request, secret):
        require_match(request.header("x-dropbox-signature"), hmac_hex(secret, request.body))


class BoxNotifications(NotificationHandler):
    """Box webhooks v2: `box-signature-primary` (or `-secondary`, for a key being rotated) is
    base64(HMAC-SHA256(key, body + box-delivery-timestamp)); the timestamp within 10 minutes."""

    vendor = "Box webhooks"

    def verify(self, request, secret):
        timestamp = request.header("box-delivery-timestamp") or ""
        try:
            seconds = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise NotificationRejected("box-delivery-timestamp is missing or not a date-time") from None
        require_fresh(seconds, tolerance=600)
        expected = hmac_base64(secret, request.body + timestamp.encode())
        received = [request.header("box-signature-primary"), request.header("box-signature-secondary")]
        if not any(r and _matches(r, expected) for r in received):
            raise NotificationRejected("the signature does not match")


class HubSpotNotifications(NotificationHandler):
    """HubSpot webhooks v3: `X-HubSpot-Signature-v3: base64(HMAC-SHA256(app secret, method + uri + body +
    timestamp))`, `X-HubSpot-Request-Timestamp` (milliseconds) within 5 minutes."""

    vendor = "HubSpot webhooks"

    def verify(self, request, secret):
        timestamp = request.header("x-hubspot-request-timestamp") or ""
        require_fresh(float(timestamp) / 1000 if timestamp.isdigit() else None, tolerance=FIVE_MINUTES)
        message = request.method.encode() + request.url.encode() + request.body + timestamp.encode()
        require_match(request.header("x-hubspot-signature-v3"), hmac_base64(secret, message))


class AtlassianNotifications(NotificationHandler):
    """Jira and Confluence admin webhooks with a secret: `X-Hub-Signature: sha256=hex(HMAC-SHA256(secret, body))`."""

    vendor = "Atlassian webhooks (Jira, Confluence)"
    secret_origin = "chosen"

    def verify(self, request, secret):
        require_match(request.header("x-hub-signature"), "sha256=" + hmac_hex(secret, request.body))


def _matches(received: str, expected: str) -> bool:
    try:
        require_match(received, expected)
        return True
    except NotificationRejected:
        return False


__all__ = [name for name, value in dict(globals()).items()
           if isinstance(value, type) and issubclass(value, NotificationHandler) and value is not NotificationHandler]
