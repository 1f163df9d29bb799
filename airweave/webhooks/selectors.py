"""Webhook reads for the faces: subscriptions with their health, the message log, attempts."""
from __future__ import annotations

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from airweave.tenancy.scoping import scoped
from airweave.webhooks.models import WebhookAttempt, WebhookMessage, WebhookSubscription

HEALTH_WINDOW = 10  # the last attempts that decide a subscription's health


def webhook_subscription_list(*, organization) -> list[WebhookSubscription]:
    return list(scoped(WebhookSubscription, organization).order_by("created_at"))


def webhook_subscription_get(*, organization, id) -> WebhookSubscription:
    """Raises WebhookSubscription.DoesNotExist (404) for another organization's subscription."""
    return scoped(WebhookSubscription, organization).get(pk=id)


def webhook_health(subscriptions: list[WebhookSubscription]) -> dict:
    """{subscription id: "healthy" | "degraded" | "failing" | "unknown"} from each one's last
    attempts (one query): all succeeded, some failed, all failed, none yet."""
    rows = (WebhookAttempt.objects.filter(subscription__in=subscriptions)
            .annotate(rank=Window(RowNumber(), partition_by=F("subscription_id"), order_by=F("created_at").desc()))
            .filter(rank__lte=HEALTH_WINDOW).values_list("subscription_id", "status"))
    seen: dict = {}
    for subscription_id, status in rows:
        seen.setdefault(subscription_id, []).append(status)
    health = {}
    for s in subscriptions:
        statuses = seen.get(s.id, [])
        failed = statuses.count(WebhookAttempt.Status.FAILED)
        health[s.id] = ("unknown" if not statuses else "healthy" if not failed
                        else "failing" if failed == len(statuses) else "degraded")
    return health


def webhook_attempts_of_subscription(*, subscription: WebhookSubscription, limit: int = 100) -> list[WebhookAttempt]:
    return list(WebhookAttempt.objects.filter(subscription=subscription).order_by("-created_at")[:limit])


def webhook_message_list(*, organization, event_types: list[str] | None = None, limit: int = 100,
                         skip: int = 0) -> list[WebhookMessage]:
    messages = scoped(WebhookMessage, organization)
    if event_types:
        messages = messages.filter(event_type__in=event_types)
    return list(messages.order_by("-created_at")[skip:skip + limit])


def webhook_message_get(*, organization, id) -> WebhookMessage:
    """Raises WebhookMessage.DoesNotExist (404) for another organization's message."""
    return scoped(WebhookMessage, organization).get(pk=id)


def webhook_attempts_of_message(*, message: WebhookMessage) -> list[WebhookAttempt]:
    return list(WebhookAttempt.objects.filter(message=message).order_by("created_at"))
