"""Change notifications (docs/notifications.md): the public endpoint vendors call, and its settings.

`/source-connections/{id}/notify/{token}` (any method: vendors handshake with GET, HEAD or POST)
is public: the unguessable token finds the connection and the vendor's signature proves the
call; the answer comes at once and the sync runs in a worker. `/source-connections/{id}/notifications`
(authenticated) shows the URL to register and sets the signing secret.
"""
from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import NotificationSecretSerializer, NotificationSettingsSerializer
from airweave.collections import selectors
from connectors.notifications import services
from connectors.notifications.base import (NotificationBadRequest, NotificationNotFound, NotificationRejected,
                                           NotificationRequest)

_ERRORS = ((NotificationNotFound, 404), (NotificationRejected, 401), (NotificationBadRequest, 400))


@csrf_exempt
def notify_view(request, id, token):
    """A vendor's call: handshake, or a signed notification that queues one incremental sync."""
    call = NotificationRequest(
        method=request.method, url=_public_base(request) + request.get_full_path(),
        headers={k.lower(): v for k, v in request.headers.items()}, body=request.body,
        query={k: request.GET.get(k) for k in request.GET})
    try:
        reply = services.notification_receive(source_connection_id=id, token=token, request=call)
    except tuple(error for error, _ in _ERRORS) as exc:
        status = next(code for error, code in _ERRORS if isinstance(exc, error))
        return HttpResponse(json.dumps({"detail": str(exc)}), status=status, content_type="application/json")
    response = HttpResponse(reply.body, status=reply.status, content_type=reply.content_type)
    for name, value in reply.headers.items():
        response[name] = value
    return response


def _public_base(request) -> str:
    """The scheme and host the vendor called (AIRWEAVE_PUBLIC_URL when set: behind a proxy the request's differ)."""
    return (settings.AIRWEAVE_PUBLIC_URL or request.build_absolute_uri("/")).rstrip("/")


def _settings_payload(connection, request) -> dict:
    handler = services.notification_handler_for(connection.short_name)
    return {"supported": handler is not None, "vendor": handler.vendor if handler else None,
            "url": _public_base(request) + services.notification_path(connection) if handler else None,
            "secret_origin": handler.secret_origin if handler else None,
            "secret_set": bool(handler and services.notification_secret_get(connection)),
            "last_notified_at": connection.sync.last_notified_at,
            "manages_subscription": bool(handler and handler.manages_subscriptions),
            "subscription": _subscription(connection.notify_subscription)}


def _subscription(value: dict | None) -> dict | None:
    return {"id": value.get("id"), "expires_at": value.get("expires_at")} if value else None


class NotificationSettingsView(APIView):
    @extend_schema(operation_id="source_connection_notifications_get", responses=NotificationSettingsSerializer)
    def get(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        return Response(NotificationSettingsSerializer(_settings_payload(connection, request)).data)

    @extend_schema(operation_id="source_connection_notifications_set", request=NotificationSecretSerializer,
                   responses=NotificationSettingsSerializer)
    def put(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        data = NotificationSecretSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.notification_secret_set(source_connection=connection,
                                             secret=data.validated_data.get("signing_secret"))
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        return Response(NotificationSettingsSerializer(_settings_payload(connection, request)).data)


class NotificationSubscriptionView(APIView):
    @extend_schema(operation_id="source_connection_notifications_subscribe", request=None,
                   responses=NotificationSettingsSerializer,
                   description="Create (or replace) the vendor subscription (Microsoft Graph, Google Drive) that "
                               "calls this connection's notification URL; renewed hourly by the worker.")
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        try:
            services.notification_subscribe(source_connection=connection, public_base_url=_public_base(request))
        except services.NotificationSubscriptionError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        return Response(NotificationSettingsSerializer(_settings_payload(connection, request)).data)

    @extend_schema(operation_id="source_connection_notifications_unsubscribe", request=None,
                   responses=NotificationSettingsSerializer)
    def delete(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        services.notification_unsubscribe(source_connection=connection)
        return Response(NotificationSettingsSerializer(_settings_payload(connection, request)).data)


class NotificationTokenRotateView(APIView):
    @extend_schema(operation_id="source_connection_notifications_rotate", request=None,
                   responses=NotificationSettingsSerializer,
                   description="A new notification URL; the old one answers 404 from now on.")
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        services.notification_token_rotate(source_connection=connection)
        return Response(NotificationSettingsSerializer(_settings_payload(connection, request)).data)
