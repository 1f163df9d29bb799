"""Receiving change notifications: token, handshake, signature, then one debounced incremental sync.

    notification_receive(source_connection_id=..., token=..., request=NotificationRequest) -> NotificationReply

The debounce: a notification starts a pending job (run by a worker after
AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS, so the rest of a burst lands in the same run); one that finds
a job pending adds nothing (that job has not listed yet); one that finds a job running sets
`Sync.notify_follow_up`, and when the job ends exactly one more run follows, however many
notifications came meanwhile. Decisions are taken under a row lock of the Sync, so concurrent
notifications and a job that ends meanwhile never lose a change nor start two runs.
"""
from __future__ import annotations

import hmac
import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from airweave.collections.models import SourceConnection, Sync, SyncJob, new_notify_token
from airweave.crypto import InvalidToken, decrypt_json, encrypt_json
from connectors.base import SourceError
from connectors.http import HttpError
from connectors.notifications.base import (NotificationBadRequest, NotificationHandler, NotificationNotFound,
                                           NotificationRejected, NotificationReply, NotificationRequest)
from connectors.registry import get_source, source_for_connection
from connectors.sync.jobs import SyncAlreadyRunning, sync_job_create
from connectors.sync.services import sync_job_run

log = logging.getLogger(__name__)
TASK = "connectors.sync.tasks.run_notified_sync"
SECRET_KEY = "secret"


def notification_handler_for(short_name: str) -> NotificationHandler | None:
    """An instance of the change-notification handler the source declares, or None (also for unknown sources)."""
    try:
        handler_cls = get_source(short_name).notifications
    except KeyError:
        return None
    return handler_cls() if handler_cls else None


def notification_path(source_connection: SourceConnection) -> str:
    """The path vendors call: `/source-connections/{id}/notify/{token}`."""
    return f"/source-connections/{source_connection.id}/notify/{source_connection.notify_token}"


def notification_secret_get(source_connection: SourceConnection) -> str | None:
    """The signing secret set or learned for the connection, else the handler's default from its
    credentials (Trello's app secret), else None."""
    if source_connection.encrypted_notify_secret:
        try:
            return decrypt_json(source_connection.encrypted_notify_secret).get(SECRET_KEY) or None
        except InvalidToken:
            log.warning("the notification secret of connection %s decrypts with no key", source_connection.id)
            return None
    handler = notification_handler_for(source_connection.short_name)
    if handler is None:
        return None
    try:
        credentials = decrypt_json(source_connection.encrypted_credentials)
    except InvalidToken:
        return None
    return handler.default_secret(credentials)


def notification_secret_set(*, source_connection: SourceConnection, secret: str | None) -> None:
    """Store (encrypted) the vendor's signing secret; None or "" clears it, so the next handshake
    (Asana, Notion) can teach a new one. Raises ValueError when the source takes no notifications."""
    if notification_handler_for(source_connection.short_name) is None:
        raise ValueError(f"source '{source_connection.short_name}' sends no change notifications")
    value = encrypt_json({SECRET_KEY: secret}) if secret else ""
    SourceConnection.objects.filter(pk=source_connection.pk).update(encrypted_notify_secret=value,
                                                                     modified_at=timezone.now())
    source_connection.encrypted_notify_secret = value


def notification_token_rotate(*, source_connection: SourceConnection) -> str:
    """Give the connection a new URL token (the old URL answers 404 from now on); returns the new path."""
    source_connection.notify_token = new_notify_token()
    SourceConnection.objects.filter(pk=source_connection.pk).update(notify_token=source_connection.notify_token,
                                                                     modified_at=timezone.now())
    return notification_path(source_connection)


@dataclass
class Received:
    """What a notification led to: `outcome` is started | coalesced | follow_up | ignored."""

    outcome: str
    job_id: str | None = None


def notification_receive(*, source_connection_id, token: str, request: NotificationRequest) -> NotificationReply:
    """Answer one vendor call to a connection's notification URL, fast: nothing syncs inline.

    Raises NotificationNotFound (404: no such connection and token, or a source without
    notifications), NotificationRejected (401: bad signature, no secret yet, stale timestamp)
    and NotificationBadRequest (400: a signed body that cannot be read).
    """
    connection = SourceConnection.objects.filter(pk=source_connection_id).first()
    if connection is None or not hmac.compare_digest(connection.notify_token.encode(), (token or "").encode()):
        raise NotificationNotFound("no source connection has this notification URL")
    handler = notification_handler_for(connection.short_name)
    if handler is None:
        raise NotificationNotFound(f"source '{connection.short_name}' sends no change notifications")
    secret = notification_secret_get(connection)
    with _unexpected_shapes_are_bad_requests():
        handshake = handler.handshake(request, secret)
    if handshake is not None:
        if handshake.secret and secret and not hmac.compare_digest(handshake.secret.encode(), secret.encode()):
            # Refused, so the vendor's subscription fails visibly instead of every later call being refused.
            raise NotificationRejected("this connection already has a signing secret: clear it with PUT "
                                       f"/source-connections/{connection.id}/notifications before subscribing again")
        if handshake.secret and not secret:
            notification_secret_set(source_connection=connection, secret=handshake.secret)
        return handshake.reply
    if not secret:
        raise NotificationRejected("this connection has no signing secret yet: set it with "
                                   f"PUT /source-connections/{connection.id}/notifications")
    with _unexpected_shapes_are_bad_requests():
        handler.verify(request, secret)
        changes = handler.changes(request)
    if not changes.changed or not _syncs(connection):
        received = Received("ignored")
    else:
        received = notification_sync_request(source_connection=connection)
        log.info("notification for connection %s: %s (%d event(s), ids %s)", connection.id, received.outcome,
                 changes.events, changes.entity_ids[:10])
    return NotificationReply(status=handler.success_status, content_type="application/json",
                             body=json.dumps({"status": received.outcome, "job_id": received.job_id}))


def _syncs(connection: SourceConnection) -> bool:
    """Whether a change should start a sync: not while the connection waits for (re-)authentication,
    nor for a connection searched at query time instead of synced (Slack's federated choice)."""
    if not connection.is_authenticated:
        return False
    return not get_source(connection.short_name).federates(connection.config)


@contextmanager
def _unexpected_shapes_are_bad_requests():
    """A handler tripping over a body of an unexpected shape answers 400, never 500."""
    try:
        yield
    except (NotificationRejected, NotificationBadRequest, NotificationNotFound):
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise NotificationBadRequest(f"the notification body has an unexpected shape ({type(exc).__name__})") from None


def notification_sync_request(*, source_connection: SourceConnection) -> Received:
    """Ask for an incremental sync of the connection, debounced (see the module docstring)."""
    with transaction.atomic():
        sync = Sync.objects.select_for_update().get(source_connection_id=source_connection.id)
        Sync.objects.filter(pk=sync.pk).update(last_notified_at=timezone.now())
        active = SyncJob.objects.filter(sync=sync, status__in=SyncJob.ACTIVE_STATUSES).first()
        if active is not None and active.status == SyncJob.Status.PENDING:
            return Received("coalesced", str(active.id))
        if active is not None:
            Sync.objects.filter(pk=sync.pk).update(notify_follow_up=True)
            return Received("follow_up", str(active.id))
        try:
            job = sync_job_create(sync=sync)
        except SyncAlreadyRunning:  # another process started one after our read
            return Received("coalesced")
    _enqueue(job)
    return Received("started", str(job.id))


def notification_follow_up(*, sync_id) -> SyncJob | None:
    """After a job of `sync_id` ended: start the one follow-up run that notifications asked for
    meanwhile, if any (and no job is active). Returns the pending job, or None."""
    with transaction.atomic():
        sync = Sync.objects.select_for_update().filter(pk=sync_id).first()
        if sync is None or not sync.notify_follow_up:
            return None
        if SyncJob.objects.filter(sync=sync, status__in=SyncJob.ACTIVE_STATUSES).exists():
            return None  # someone else's job runs: it sees the changes, and its end checks the flag again
        Sync.objects.filter(pk=sync.pk).update(notify_follow_up=False)
        job = sync_job_create(sync=sync)
    _enqueue(job)
    return job


def notified_sync_run(*, job_id) -> str:
    """The worker's side: wait the debounce window, then run the job (if it is still pending) and its follow-up.

    Returns the job's final status, or "gone" when it was cancelled or deleted meanwhile.
    """
    delay = float(settings.AIRWEAVE_NOTIFY_DEBOUNCE_SECONDS)
    if delay > 0:
        time.sleep(delay)
    job = SyncJob.objects.filter(pk=job_id, status=SyncJob.Status.PENDING).first()
    if job is None:
        return "gone"
    try:
        return sync_job_run(job_id=job.id).status
    finally:
        notification_follow_up(sync_id=job.sync_id)


def _enqueue(job: SyncJob) -> None:
    from django_q.tasks import async_task

    async_task(TASK, str(job.id), task_name=f"notified-sync-job-{job.id}", group=f"sync-{job.source_connection_id}")


# --- subscriptions the product creates and renews (Graph, Drive) ------------------------------------
RENEWAL_SCHEDULE = "renew-notification-subscriptions"


class NotificationSubscriptionError(ValueError):
    """The subscription cannot be made: the source has none to make, no public URL, or the vendor refused."""


def notification_subscribe(*, source_connection: SourceConnection, public_base_url: str) -> dict:
    """Create (or replace) the vendor subscription that calls this connection's notification URL.

    Generates the secret the vendor will send back (Graph clientState, Drive channel token) when
    the connection has none. `public_base_url` is where the vendor reaches this server
    (AIRWEAVE_PUBLIC_URL in production). Returns the stored subscription
    `{id, expires_at, url, ...}`. Raises NotificationSubscriptionError.
    """
    handler = notification_handler_for(source_connection.short_name)
    if handler is None or not handler.manages_subscriptions:
        raise NotificationSubscriptionError(f"source '{source_connection.short_name}' has no subscription for this "
                                            "server to create: register the notification URL at the vendor")
    if not public_base_url.startswith(("https://", "http://")):
        raise NotificationSubscriptionError("no public URL: set AIRWEAVE_PUBLIC_URL to the address the vendor reaches")
    secret = notification_secret_get(source_connection)
    if not secret:
        secret = new_notify_token()
        notification_secret_set(source_connection=source_connection, secret=secret)
    url = public_base_url.rstrip("/") + notification_path(source_connection)
    source = source_for_connection(source_connection)
    try:
        if source_connection.notify_subscription:
            _unsubscribe_quietly(handler, source, source_connection)
        subscription = {**handler.subscribe(source, url=url, secret=secret), "url": url}
    except (HttpError, SourceError) as exc:
        raise NotificationSubscriptionError(f"{handler.vendor} refused the subscription: {exc}") from None
    finally:
        source.close()
    _save_subscription(source_connection, subscription)
    return subscription


def notification_unsubscribe(*, source_connection: SourceConnection) -> None:
    """Remove the connection's vendor subscription, if any. Best effort: a vendor that cannot be
    reached is logged (the subscription then expires on its own), never raised."""
    if not source_connection.notify_subscription:
        return
    handler = notification_handler_for(source_connection.short_name)
    if handler is not None and handler.manages_subscriptions:
        try:
            source = source_for_connection(source_connection)
        except Exception:  # credentials that no longer decrypt: nothing to call the vendor with
            log.warning("cannot remove the subscription of connection %s: no usable credentials", source_connection.id)
        else:
            try:
                _unsubscribe_quietly(handler, source, source_connection)
            finally:
                source.close()
    _save_subscription(source_connection, None)


def notification_subscriptions_renew(*, now=None) -> int:
    """Renew every subscription that expires within its handler's `renew_within_seconds`. Returns
    how many were renewed; one that fails is logged and left to expire (polling still runs)."""
    now = now or timezone.now()
    renewed = 0
    for connection in SourceConnection.objects.exclude(notify_subscription=None).iterator():
        handler = notification_handler_for(connection.short_name)
        subscription = connection.notify_subscription or {}
        expires = parse_datetime(str(subscription.get("expires_at") or "").replace(".0000000Z", "Z"))
        if handler is None or not handler.manages_subscriptions or expires is None:
            continue
        if expires - now > timedelta(seconds=handler.renew_within_seconds):
            continue
        try:
            source = source_for_connection(connection)
            try:
                fresh = handler.renew(source, subscription, url=subscription["url"],
                                      secret=notification_secret_get(connection) or "")
            finally:
                source.close()
        except Exception as exc:  # the vendor, the network, the credentials: each is logged, none stops the others
            log.warning("renewing the subscription of connection %s failed: %s", connection.id, exc)
            continue
        _save_subscription(connection, {**fresh, "url": subscription["url"]})
        renewed += 1
    return renewed


def ensure_renewal_schedule(**kwargs) -> None:
    """Make sure subscriptions are renewed every hour (called after migrate)."""
    from django_q.models import Schedule

    Schedule.objects.get_or_create(
        name=RENEWAL_SCHEDULE,
        defaults={"func": "connectors.sync.tasks.renew_notification_subscriptions", "schedule_type": Schedule.HOURLY,
                  "repeats": -1})


def _unsubscribe_quietly(handler, source, connection) -> None:
    try:
        handler.unsubscribe(source, connection.notify_subscription)
    except Exception as exc:  # it expires on its own; a failed removal must not block a delete or a re-subscribe
        log.warning("removing the subscription of connection %s failed: %s", connection.id, exc)


def _save_subscription(connection: SourceConnection, subscription: dict | None) -> None:
    SourceConnection.objects.filter(pk=connection.pk).update(notify_subscription=subscription,
                                                             modified_at=timezone.now())
    connection.notify_subscription = subscription
