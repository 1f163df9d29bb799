"""Source connection services: create, update and delete, validated against the source's declaration."""
from __future__ import annotations

from django.db import transaction

from airweave.collections.models import Collection, SourceConnection, Sync
from airweave.collections.selectors import source_connection_count
from airweave.crypto import encrypt_json
from airweave.tenancy.models import Organization
from airweave.tenancy.quotas import SOURCE_CONNECTIONS, quota_ensure
from connectors.registry import get_source
from connectors.sync.schedules import sync_schedule_apply, validate_cron


class SourceConnectionError(ValueError):
    """Bad source connection input; `field` names what to fix."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def source_connection_create(*, collection: Collection, short_name: str, name: str | None = None,
                             description: str = "", config: dict | None = None, credentials: dict | None = None,
                             cron_schedule: str = "", sync_immediately: bool = True, created_by=None,
                             for_api: bool = True) -> SourceConnection:
    """Create a connection (and its Sync) in `collection`'s organization; start a job if asked.

    `config` is validated against the source's declared config fields, and `credentials` (when
    given) against its declared auth fields; `for_api` applies the API's stricter rules (e.g.
    local paths only under AIRWEAVE_LOCAL_ROOTS). Raises SourceConnectionError naming the bad
    field, and QuotaExceeded when the organization has as many connections as its quota allows.
    """
    try:
        source_cls = get_source(short_name)
    except KeyError:
        raise SourceConnectionError(f"unknown source '{short_name}'; see GET /sources", "short_name") from None
    try:
        clean_config = source_cls.validate_config(config or {}, for_api=for_api)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "config") from None
    credentials = _valid_credentials(source_cls, credentials)
    cron_schedule = _valid_cron(cron_schedule)
    with transaction.atomic():
        # Locking the organization's row serialises concurrent creations against the quota.
        organization = Organization.objects.select_for_update().get(pk=collection.organization_id)
        quota_ensure(organization, SOURCE_CONNECTIONS, source_connection_count(organization=organization))
        connection = SourceConnection.objects.create(
            organization_id=collection.organization_id, collection=collection,
            name=(name or f"{source_cls.name} connection")[:200], description=description or "",
            short_name=short_name, config=clean_config, encrypted_credentials=encrypt_json(credentials or {}),
            auth_method="direct", created_by=created_by, modified_by=created_by,
        )
        sync = Sync.objects.create(organization_id=collection.organization_id, source_connection=connection,
                                   cron_schedule=cron_schedule)
        sync_schedule_apply(sync)
    if sync_immediately:
        from connectors.sync.services import sync_job_start

        sync_job_start(source_connection=connection)
        connection.refresh_from_db()
    return connection


def source_connection_delete(*, source_connection: SourceConnection) -> None:
    """Delete a connection with its sync, jobs, entities and chunks."""
    source_connection.delete()


def source_connection_update(*, source_connection: SourceConnection, name: str | None = None,
                             description: str | None = None, config: dict | None = None,
                             schedule: dict | None = None, credentials: dict | None = None, modified_by=None,
                             for_api: bool = True) -> SourceConnection:
    """Rename, re-describe, re-configure, re-schedule or re-authenticate a connection.

    `credentials`, when given, replace the stored ones as a whole (validated against the
    source's auth fields, encrypted at rest). Raises SourceConnectionError.
    """
    if config is not None:
        try:
            source_connection.config = get_source(source_connection.short_name).validate_config(config, for_api=for_api)
        except ValueError as exc:
            raise SourceConnectionError(str(exc), "config") from None
    if credentials is not None:
        source_connection.encrypted_credentials = encrypt_json(
            _valid_credentials(get_source(source_connection.short_name), credentials))
    if name is not None:
        source_connection.name = name[:200]
    if description is not None:
        source_connection.description = description
    source_connection.modified_by = modified_by or source_connection.modified_by
    cron = _valid_cron(schedule.get("cron") or "") if schedule is not None else None
    with transaction.atomic():
        source_connection.save()
        if schedule is not None:
            sync = source_connection.sync
            sync.cron_schedule = cron
            sync.continuous = bool(schedule.get("continuous"))
            sync.cursor_field = schedule.get("cursor_field") or ""
            sync.save()
            sync_schedule_apply(sync)
    return source_connection


def _valid_credentials(source_cls, credentials: dict | None) -> dict | None:
    """`credentials` checked against the source's auth fields, when it declares any and they are given."""
    if not credentials or not source_cls.auth_fields:
        return credentials
    try:
        return source_cls.validate_auth(credentials)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "authentication.credentials") from None


def _valid_cron(expression: str) -> str:
    try:
        return validate_cron(expression)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "schedule.cron") from None
