"""Writes for tenancy: organizations and API keys."""
from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from airweave.tenancy.models import APIKey, Organization

API_KEY_DEFAULT_DAYS = 90


def organization_get_or_create(*, name: str) -> Organization:
    """Return the organization called `name`, creating it if needed."""
    org, _ = Organization.objects.get_or_create(name=name)
    return org


@dataclass(frozen=True)
class IssuedAPIKey:
    """An API key as issued: `key` is the full secret, shown once and never stored."""

    api_key: APIKey
    key: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_key_create(*, organization: Organization, name: str = "", expires_in_days: int | None = API_KEY_DEFAULT_DAYS, created_by=None) -> IssuedAPIKey:
    """Create an API key for `organization`. The returned `key` is the only copy of the secret."""
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    api_key = APIKey.objects.create(
        organization=organization,
        name=name,
        prefix=prefix,
        secret_hash=_digest(secret),
        expires_at=expires_at,
        created_by=created_by,
    )
    return IssuedAPIKey(api_key=api_key, key=f"aw_{prefix}_{secret}")


def api_key_authenticate(raw_key: str) -> APIKey | None:
    """Return the usable APIKey for `raw_key` (`aw_<prefix>_<secret>`), or None.

    One indexed lookup by prefix, then a constant-time comparison of the secret's digest.
    Records `last_used_at` at most once a minute.
    """
    parts = raw_key.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != "aw":
        return None
    _, prefix, secret = parts
    api_key = APIKey.objects.select_related("organization").filter(prefix=prefix).first()
    if api_key is None or not hmac.compare_digest(api_key.secret_hash, _digest(secret)):
        return None
    now = timezone.now()
    if not api_key.is_usable(now):
        return None
    if api_key.last_used_at is None or now - api_key.last_used_at > timedelta(minutes=1):
        APIKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key
