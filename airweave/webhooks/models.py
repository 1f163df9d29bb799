"""Webhook subscriptions of an organization, the messages its events produced, and every delivery attempt."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from airweave.tenancy.models import Organization

EVENT_TYPES = (
    "sync.pending", "sync.running", "sync.completed", "sync.failed", "sync.cancelled",
    "source_connection.created", "source_connection.auth_completed", "source_connection.deleted",
    "collection.created", "collection.updated", "collection.deleted",
)


class WebhookSubscription(models.Model):
    """An endpoint that receives the organization's events of `event_types`, signed with its secret."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    url = models.URLField(max_length=2048)
    event_types = models.JSONField(default=list)
    disabled = models.BooleanField(default=False)
    description = models.CharField(max_length=500, blank=True)
    encrypted_secret = models.TextField(help_text="The signing secret (whsec_...), encrypted at rest")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.url} ({', '.join(self.event_types)})"


class WebhookMessage(models.Model):
    """One event as sent to subscribers (the message log); its id is the `webhook-id` header."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=64)
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"])]


class WebhookDelivery(models.Model):
    """A message on its way to one subscription: pending until an attempt succeeds or attempts run out."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    message = models.ForeignKey(WebhookMessage, on_delete=models.CASCADE, related_name="deliveries")
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "subscription"], name="one_delivery_per_subscription")]


class WebhookAttempt(models.Model):
    """One HTTP request of a delivery: its outcome, status code (0: no answer), an excerpt of the answer, duration."""

    class Status(models.TextChoices):
        SUCCESS = "success"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    message = models.ForeignKey(WebhookMessage, on_delete=models.CASCADE, related_name="attempts")
    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    url = models.URLField(max_length=2048)
    status = models.CharField(max_length=16, choices=Status.choices)
    response_status_code = models.PositiveIntegerField(default=0)
    response = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    trigger = models.CharField(max_length=16, default="scheduled", help_text="scheduled, retry or recovery")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["subscription", "-created_at"])]
