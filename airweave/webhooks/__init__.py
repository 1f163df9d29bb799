"""Webhooks: subscriptions, the message log, signed deliveries with retries (see docs/webhooks.md)."""
