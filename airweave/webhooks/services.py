"""Webhook writes: subscriptions, the message log, signed deliveries, retries and recovery.

An event (airweave.events.publish_domain_event) becomes one WebhookMessage, and one
WebhookDelivery per enabled subscription of its type, each delivered by its own django-q2 task
once the transaction commits: a receiver that hangs (bounded by the timeouts) or fails delays no
other delivery and never the work that emitted the event. Each request is signed per the Standard
Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`, the
`standardwebhooks` package) and goes through the SSRF guard (connectors.http.ssrf). A failed attempt
is retried with exponential backoff (AIRWEAVE_WEBHOOK_RETRY_SECONDS × 2^(n-1), as a one-off
django-q2 schedule) until AIRWEAVE_WEBHOOK_MAX_ATTEMPTS; then the delivery is failed, and
`webhook_recover` sends it again. Messages are logged only for organizations with a subscription.
"""
from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import time
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from airweave.crypto import decrypt_json, encrypt_json
from airweave.webhooks.models import EVENT_TYPES, WebhookAttempt, WebhookDelivery, WebhookMessage, WebhookSubscription

logger = logging.getLogger(__name__)
SECRET_PREFIX = "whsec_"
RESPONSE_EXCERPT_CHARS = 1000


class WebhookError(ValueError):
    """Bad webhook input; `field` names what to fix."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _setting(name: str, default):
    return getattr(settings, name, default)


# --- Subscriptions ---
def _valid_url(url: str) -> str:
    from connectors.http.errors import BlockedAddress
    from connectors.http.ssrf import check_url

    try:
        check_url(url)
    except BlockedAddress as exc:
        raise WebhookError(f"url is refused: {exc} (private and loopback hosts need AIRWEAVE_ALLOW_PRIVATE_HOSTS "
                           "or AIRWEAVE_ALLOWED_PRIVATE_NETWORKS)", "url") from None
    return url


def _valid_event_types(event_types) -> list[str]:
    if not isinstance(event_types, (list, tuple)) or not event_types:
        raise WebhookError(f"event_types must be a non-empty list of: {', '.join(EVENT_TYPES)}", "event_types")
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown:
        raise WebhookError(f"unknown event type(s) {', '.join(map(str, unknown))}; known: {', '.join(EVENT_TYPES)}",
                           "event_types")
    return list(dict.fromkeys(event_types))


def _valid_secret(secret: str | None) -> str:
    """`secret` as `whsec_<base64>` (24 to 64 random bytes, generated when absent)."""
    if secret is None:
        return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
    raw = secret.removeprefix(SECRET_PREFIX)
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if not 24 <= len(decoded) <= 64:
        raise WebhookError("secret must be whsec_ followed by the base64 of 24 to 64 random bytes (as the Standard "
                           "Webhooks libraries expect), e.g. whsec_" + base64.b64encode(b"0" * 24).decode(), "secret")
    return SECRET_PREFIX + raw


def webhook_subscription_create(*, organization, url: str, event_types, secret: str | None = None,
                                description: str = "", created_by=None) -> WebhookSubscription:
    """Subscribe `url` to the organization's events of `event_types`. Raises WebhookError."""
    return WebhookSubscription.objects.create(
        organization=organization, url=_valid_url(url), event_types=_valid_event_types(event_types),
        encrypted_secret=encrypt_json({"secret": _valid_secret(secret)}), description=description or "",
        created_by=created_by)


def webhook_subscription_secret(subscription: WebhookSubscription) -> str:
    """The subscription's signing secret (whsec_...)."""
    return decrypt_json(subscription.encrypted_secret)["secret"]


def webhook_subscription_update(*, subscription: WebhookSubscription, url: str | None = None, event_types=None,
                                disabled: bool | None = None, recover_since: datetime | None = None) -> WebhookSubscription:
    """Change the URL, the event types (replaced as a whole) or pause and resume delivery. Re-enabling
    with `recover_since` sends again what failed or was not sent since then. Raises WebhookError."""
    if url is not None:
        subscription.url = _valid_url(url)
    if event_types is not None:
        subscription.event_types = _valid_event_types(event_types)
    was_disabled = subscription.disabled
    if disabled is not None:
        subscription.disabled = disabled
    subscription.save()
    if recover_since is not None and was_disabled and not subscription.disabled:
        webhook_recover(subscription=subscription, since=recover_since)
    return subscription


def webhook_subscription_delete(*, subscription: WebhookSubscription) -> None:
    """Delete a subscription with its deliveries and attempts (the messages stay in the log)."""
    subscription.delete()


# --- Events -> messages -> deliveries ---
def webhook_event_publish(organization_id, event_type: str, payload: dict) -> WebhookMessage | None:
    """The domain-event listener: log the event as a message (when the organization has any
    subscription) and enqueue one delivery per enabled subscription of its type."""
    if event_type not in EVENT_TYPES:
        return None
    subscriptions = list(WebhookSubscription.objects.filter(organization_id=organization_id))
    if not subscriptions:
        return None
    now = timezone.now()
    body = json.loads(json.dumps({"event_type": event_type, **payload, "timestamp": now.isoformat()},
                                 cls=DjangoJSONEncoder))
    message = WebhookMessage.objects.create(organization_id=organization_id, event_type=event_type, payload=body,
                                            created_at=now)
    for subscription in subscriptions:
        if not subscription.disabled and event_type in subscription.event_types:
            _enqueue(WebhookDelivery.objects.create(message=message, subscription=subscription), "scheduled")
    return message


def _enqueue(delivery: WebhookDelivery, trigger: str) -> None:
    from django_q.tasks import async_task

    delivery_id = str(delivery.id)
    transaction.on_commit(lambda: async_task("airweave.webhooks.tasks.deliver", delivery_id, trigger,
                                             task_name=f"webhook-{delivery_id}-{uuid.uuid4().hex[:6]}"))


def retry_delay_seconds(attempt_number: int) -> float:
    """Seconds before the attempt after `attempt_number` failed ones: base × 2^(n-1)."""
    return float(_setting("AIRWEAVE_WEBHOOK_RETRY_SECONDS", 30)) * 2 ** (attempt_number - 1)


def _signed_headers(message: WebhookMessage, secret: str, body: str) -> dict:
    from standardwebhooks.webhooks import Webhook

    sent_at = datetime.fromtimestamp(int(time.time()), tz=timezone.get_current_timezone())
    msg_id = f"msg_{message.id.hex}"
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, sent_at, body),
            "Content-Type": "application/json", "User-Agent": "airweave-webhooks"}


def webhook_delivery_attempt(delivery_id, trigger: str = "scheduled") -> WebhookAttempt | None:
    """Send one delivery once and record the attempt; schedule the next one on failure.

    Nothing happens for a delivery that succeeded already, or whose subscription is now disabled
    (it stays pending: recovery sends it later)."""
    from connectors.http.ssrf import guarded_session

    delivery = (WebhookDelivery.objects.select_related("message", "subscription").filter(pk=delivery_id).first())
    if delivery is None or delivery.status == WebhookDelivery.Status.SUCCEEDED or delivery.subscription.disabled:
        return None
    message, subscription = delivery.message, delivery.subscription
    body = json.dumps(message.payload, separators=(",", ":"))
    started = time.monotonic()
    code, excerpt = 0, ""
    try:
        headers = _signed_headers(message, webhook_subscription_secret(subscription), body)
        with guarded_session() as session:
            response = session.post(subscription.url, data=body.encode(), headers=headers, allow_redirects=False,
                                    timeout=(float(_setting("AIRWEAVE_WEBHOOK_CONNECT_TIMEOUT", 5)),
                                             float(_setting("AIRWEAVE_WEBHOOK_READ_TIMEOUT", 10))))
            code, excerpt = response.status_code, response.text[:RESPONSE_EXCERPT_CHARS]
    except Exception as exc:  # noqa: BLE001 — any failure to deliver (refused address, timeout, reset) is the finding
        excerpt = f"{type(exc).__name__}: {exc}"[:RESPONSE_EXCERPT_CHARS]
    ok = 200 <= code < 300
    delivery.attempt_count += 1
    attempt = WebhookAttempt.objects.create(
        delivery=delivery, message=message, subscription=subscription, number=delivery.attempt_count,
        url=subscription.url, status=WebhookAttempt.Status.SUCCESS if ok else WebhookAttempt.Status.FAILED,
        response_status_code=code, response=excerpt, duration_ms=int((time.monotonic() - started) * 1000),
        trigger=trigger)
    if ok:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.SUCCEEDED, None
    elif delivery.attempt_count < int(_setting("AIRWEAVE_WEBHOOK_MAX_ATTEMPTS", 6)):
        delivery.status = WebhookDelivery.Status.PENDING
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=retry_delay_seconds(delivery.attempt_count))
        _schedule_retry(delivery)
    else:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
    delivery.save(update_fields=["status", "attempt_count", "next_attempt_at", "updated_at"])
    return attempt


def _schedule_retry(delivery: WebhookDelivery) -> None:
    from django_q.models import Schedule

    Schedule.objects.create(name=f"webhook-retry-{delivery.id}-{delivery.attempt_count}",
                            func="airweave.webhooks.tasks.deliver", args=repr((str(delivery.id), "retry")),
                            schedule_type=Schedule.ONCE, repeats=-1, next_run=delivery.next_attempt_at)


def webhook_recover(*, subscription: WebhookSubscription, since: datetime, until: datetime | None = None) -> int:
    """Send again the messages of the subscription's event types created in [since, until) that it
    has not received (failed, pending, or never sent because it was disabled); the number queued."""
    messages = WebhookMessage.objects.filter(organization_id=subscription.organization_id, created_at__gte=since,
                                             event_type__in=subscription.event_types)
    if until is not None:
        messages = messages.filter(created_at__lt=until)
    queued = 0
    for message in messages.order_by("created_at"):
        delivery, _ = WebhookDelivery.objects.get_or_create(message=message, subscription=subscription)
        if delivery.status == WebhookDelivery.Status.SUCCEEDED:
            continue
        delivery.status, delivery.attempt_count, delivery.next_attempt_at = WebhookDelivery.Status.PENDING, 0, None
        delivery.save(update_fields=["status", "attempt_count", "next_attempt_at", "updated_at"])
        _enqueue(delivery, "recovery")
        queued += 1
    return queued
