"""/webhooks: subscriptions, the message log with delivery attempts, and recovery (airweave.webhooks)."""
from __future__ import annotations

import logging
import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import (
    RecoveryTaskSerializer, WebhookMessageSerializer, WebhookMessageWithAttemptsSerializer, WebhookRecoverSerializer,
    WebhookSubscriptionCreateSerializer, WebhookSubscriptionDetailSerializer, WebhookSubscriptionSerializer,
    WebhookSubscriptionUpdateSerializer, webhook_message_payload, webhook_subscription_payload,
)
from airweave.api.views.params import bool_param, int_param
from airweave.tenancy.context import acting_user
from airweave.webhooks import selectors, services

logger = logging.getLogger(__name__)


def _one(subscription) -> dict:
    return webhook_subscription_payload(subscription, selectors.webhook_health([subscription])[subscription.id])


class WebhookSubscriptionListView(APIView):
    @extend_schema(responses=WebhookSubscriptionSerializer(many=True))
    def get(self, request):
        subscriptions = selectors.webhook_subscription_list(organization=request.organization)
        health = selectors.webhook_health(subscriptions)
        return Response(WebhookSubscriptionSerializer(
            [webhook_subscription_payload(s, health[s.id]) for s in subscriptions], many=True).data)

    @extend_schema(request=WebhookSubscriptionCreateSerializer, responses=WebhookSubscriptionSerializer)
    def post(self, request):
        data = WebhookSubscriptionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        subscription = services.webhook_subscription_create(
            organization=request.organization, url=v["url"], event_types=v["event_types"], secret=v.get("secret"),
            description=v.get("description", ""), created_by=acting_user(request.user))
        return Response(WebhookSubscriptionSerializer(_one(subscription)).data)


class WebhookSubscriptionDetailView(APIView):
    @extend_schema(parameters=[OpenApiParameter("include_secret", bool)], responses=WebhookSubscriptionDetailSerializer)
    def get(self, request, id):
        subscription = selectors.webhook_subscription_get(organization=request.organization, id=id)
        secret = services.webhook_subscription_secret(subscription) if bool_param(request, "include_secret") else None
        payload = webhook_subscription_payload(
            subscription, selectors.webhook_health([subscription])[subscription.id],
            attempts=selectors.webhook_attempts_of_subscription(subscription=subscription), secret=secret)
        return Response(WebhookSubscriptionDetailSerializer(payload).data)

    @extend_schema(request=WebhookSubscriptionUpdateSerializer, responses=WebhookSubscriptionSerializer)
    def patch(self, request, id):
        subscription = selectors.webhook_subscription_get(organization=request.organization, id=id)
        data = WebhookSubscriptionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.webhook_subscription_update(subscription=subscription, **data.validated_data)
        return Response(WebhookSubscriptionSerializer(_one(subscription)).data)

    @extend_schema(responses={200: WebhookSubscriptionSerializer})
    def delete(self, request, id):
        subscription = selectors.webhook_subscription_get(organization=request.organization, id=id)
        payload = WebhookSubscriptionSerializer(_one(subscription)).data
        services.webhook_subscription_delete(subscription=subscription)
        return Response(payload)


class WebhookRecoverView(APIView):
    @extend_schema(request=WebhookRecoverSerializer, responses=RecoveryTaskSerializer)
    def post(self, request, id):
        subscription = selectors.webhook_subscription_get(organization=request.organization, id=id)
        data = WebhookRecoverSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        queued = services.webhook_recover(subscription=subscription, **data.validated_data)
        task_id = uuid.uuid4()
        logger.info("webhook recovery %s of subscription %s: %d message(s) queued", task_id, subscription.id, queued)
        return Response(RecoveryTaskSerializer({"id": task_id, "status": "running" if queued else "completed",
                                                "queued_messages": queued}).data)


class WebhookMessageListView(APIView):
    @extend_schema(parameters=[OpenApiParameter("event_types", str, many=True), OpenApiParameter("skip", int),
                               OpenApiParameter("limit", int)], responses=WebhookMessageSerializer(many=True))
    def get(self, request):
        messages = selectors.webhook_message_list(
            organization=request.organization, event_types=request.query_params.getlist("event_types") or None,
            skip=int_param(request, "skip", 0, minimum=0), limit=int_param(request, "limit", 100, minimum=1, maximum=1000))
        return Response(WebhookMessageSerializer([webhook_message_payload(m) for m in messages], many=True).data)


class WebhookMessageDetailView(APIView):
    @extend_schema(parameters=[OpenApiParameter("include_attempts", bool)], responses=WebhookMessageWithAttemptsSerializer)
    def get(self, request, id):
        message = selectors.webhook_message_get(organization=request.organization, id=id)
        attempts = selectors.webhook_attempts_of_message(message=message) if bool_param(request, "include_attempts") else None
        return Response(WebhookMessageWithAttemptsSerializer(webhook_message_payload(message, attempts)).data)
