"""Quotas per organization: entities, searches per month, source connections.

Limits come from the organization's `quota_*` field when set, else from the settings
AIRWEAVE_QUOTA_ENTITIES, AIRWEAVE_QUOTA_SEARCHES_PER_MONTH and AIRWEAVE_QUOTA_SOURCE_CONNECTIONS
(unset or 0: unlimited;
an organization's own 0 allows none). Counted quantities (entities, connections) are counted by the caller
from its own tables; searches are metered here in a monthly UsageCounter (calendar month, UTC),
and only while a search limit applies, so an unlimited server writes nothing per search.

Where each is enforced: source connections at creation (QuotaExceeded → 403), searches at
every search entry point (QuotaExceeded → 429 with Retry-After until the month's end), entities
during a sync (new entities past the limit are skipped with the reason "quota", counted on the job).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone as dt_timezone

from django.conf import settings
from django.db import connection

from airweave.tenancy.models import Organization, UsageCounter
from airweave.tenancy.scoping import organization_pk

ENTITIES = "entities"
SEARCHES_PER_MONTH = "searches_per_month"
SOURCE_CONNECTIONS = "source_connections"

_SETTINGS = {
    ENTITIES: "AIRWEAVE_QUOTA_ENTITIES",
    SEARCHES_PER_MONTH: "AIRWEAVE_QUOTA_SEARCHES_PER_MONTH",
    SOURCE_CONNECTIONS: "AIRWEAVE_QUOTA_SOURCE_CONNECTIONS",
}
_LABELS = {ENTITIES: "entities", SEARCHES_PER_MONTH: "searches this month", SOURCE_CONNECTIONS: "source connections"}


class QuotaExceeded(Exception):
    """An organization reached a quota. `retry_after` is seconds until it resets (None: it does not)."""

    def __init__(self, quota: str, limit: int, used: int, retry_after: int | None = None):
        self.quota, self.limit, self.used, self.retry_after = quota, limit, used, retry_after
        setting = _SETTINGS[quota]
        message = (f"Quota exceeded: this organization may have at most {limit} {_LABELS[quota]} "
                   f"(it has {used}).")
        if retry_after is not None:
            message += " The count resets at the start of next month (UTC)."
        message += f" An operator can raise it ({setting}, or the organization's quota in the admin)."
        super().__init__(message)


@dataclass(frozen=True)
class Usage:
    """A quota's state for one organization: `limit` None means unlimited."""

    quota: str
    used: int
    limit: int | None

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)


def _organization(organization) -> Organization:
    if isinstance(organization, Organization):
        return organization
    return Organization.objects.get(pk=organization_pk(organization))


def quota_limit(organization, quota: str) -> int | None:
    """The limit of `quota` for `organization` (an Organization or its id); None when unlimited."""
    own = getattr(_organization(organization), f"quota_{quota}")
    if own is not None:  # the organization's own limit; 0 allows none
        return int(own)
    value = getattr(settings, _SETTINGS[quota], None)
    return int(value) if value else None  # the setting: empty or 0 is unlimited


def quota_ensure(organization, quota: str, used: int, adding: int = 1) -> None:
    """Raise QuotaExceeded when `used + adding` would pass the limit of `quota`."""
    limit = quota_limit(organization, quota)
    if limit is not None and used + adding > limit:
        raise QuotaExceeded(quota, limit, used)


def quota_remaining(organization, quota: str, used: int) -> int | None:
    """How many more of `quota` fit (None: unlimited)."""
    limit = quota_limit(organization, quota)
    return None if limit is None else max(0, limit - used)


def month_start(now: datetime | None = None) -> date:
    now = now or datetime.now(dt_timezone.utc)
    return date(now.year, now.month, 1)


def _seconds_to_next_month(now: datetime) -> int:
    following = datetime(now.year + (now.month == 12), now.month % 12 + 1, 1, tzinfo=dt_timezone.utc)
    return max(1, int((following - now).total_seconds()))


def search_usage(organization, now: datetime | None = None) -> Usage:
    """Searches counted this month for `organization` and its limit."""
    period = month_start(now)
    used = UsageCounter.objects.filter(organization_id=organization_pk(organization), metric=SEARCHES_PER_MONTH,
                                       period=period).values_list("count", flat=True).first() or 0
    return Usage(SEARCHES_PER_MONTH, used, quota_limit(organization, SEARCHES_PER_MONTH))


def search_quota_consume(organization, now: datetime | None = None) -> None:
    """Count one search of `organization` this month; raise QuotaExceeded (with `retry_after`) past the limit.

    A refused search is not counted. One atomic upsert, so concurrent searches never lose a
    count; nothing is written when no search limit applies.
    """
    limit = quota_limit(organization, SEARCHES_PER_MONTH)
    if limit is None:
        return
    now = now or datetime.now(dt_timezone.utc)
    if limit == 0:
        raise QuotaExceeded(SEARCHES_PER_MONTH, 0, 0, retry_after=_seconds_to_next_month(now))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {UsageCounter._meta.db_table} (organization_id, metric, period, count)
                VALUES (%s, %s, %s, 1)
                ON CONFLICT (organization_id, metric, period)
                DO UPDATE SET count = {UsageCounter._meta.db_table}.count + 1
                WHERE {UsageCounter._meta.db_table}.count < %s
                RETURNING count""",
            [organization_pk(organization), SEARCHES_PER_MONTH, month_start(now), limit],
        )
        row = cursor.fetchone()
    if row is None or row[0] > limit:
        raise QuotaExceeded(SEARCHES_PER_MONTH, limit, limit, retry_after=_seconds_to_next_month(now))
