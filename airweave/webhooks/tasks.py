"""django-q2 entry points of webhook deliveries."""
from __future__ import annotations

from airweave.webhooks.services import webhook_delivery_attempt


def deliver(delivery_id: str, trigger: str = "scheduled") -> str | None:
    """Send one delivery (a task of its own, so a slow receiver holds up nothing else); the attempt's status."""
    attempt = webhook_delivery_attempt(delivery_id, trigger)
    return attempt.status if attempt else None
