"""Credential stores: where an auth object reads and persists a connection's credentials.

A credential store gives the HTTP client's auth object three things: the latest credentials
under a cross-process lock (so two workers never spend one rotating refresh token twice), a
way to persist refreshed tokens, and a way to mark the connection `needs_reauth`.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class CredentialStore:
    """Interface. `locked()` yields the latest credentials dict and holds a lock until exit."""

    def load(self) -> dict:
        raise NotImplementedError

    @contextmanager
    def locked(self) -> Iterator[dict]:
        raise NotImplementedError
        yield {}  # pragma: no cover

    def save(self, credentials: dict) -> None:
        """Persist `credentials` (the whole dict). Inside `locked()` it joins the lock's transaction."""
        raise NotImplementedError

    def mark_needs_reauth(self, category: str, message: str) -> None:
        raise NotImplementedError


class MemoryCredentialStore(CredentialStore):
    """Credentials kept in memory (tests, previews, sources run without a connection)."""

    def __init__(self, credentials: dict | None = None):
        self.credentials = dict(credentials or {})
        self.needs_reauth: tuple[str, str] | None = None
        self._lock = threading.Lock()

    def load(self) -> dict:
        return dict(self.credentials)

    @contextmanager
    def locked(self) -> Iterator[dict]:
        with self._lock:
            yield dict(self.credentials)

    def save(self, credentials: dict) -> None:
        self.credentials = dict(credentials)

    def mark_needs_reauth(self, category: str, message: str) -> None:
        self.needs_reauth = (category, message)


class ConnectionCredentialStore(CredentialStore):
    """The encrypted credentials of one SourceConnection row.

    `locked()` runs a transaction holding `SELECT ... FOR UPDATE` on the row, so a refresh in
    one worker waits for a refresh in another and then sees its result.
    """

    def __init__(self, source_connection_id):
        self.source_connection_id = source_connection_id

    def _rows(self):
        from airweave.collections.models import SourceConnection

        return SourceConnection.objects.filter(pk=self.source_connection_id)

    def load(self) -> dict:
        from airweave.crypto import decrypt_json

        token = self._rows().values_list("encrypted_credentials", flat=True).first()
        return decrypt_json(token or "")

    @contextmanager
    def locked(self) -> Iterator[dict]:
        from django.db import transaction

        from airweave.crypto import decrypt_json

        with transaction.atomic():
            token = self._rows().select_for_update().values_list("encrypted_credentials", flat=True).first()
            yield decrypt_json(token or "")

    def save(self, credentials: dict) -> None:
        """Persist `credentials` encrypted on the row, e.g. a refreshed or rotated OAuth token."""
        from django.utils import timezone

        from airweave.crypto import encrypt_json

        self._rows().update(encrypted_credentials=encrypt_json(credentials), modified_at=timezone.now())

    def mark_needs_reauth(self, category: str, message: str) -> None:
        """Mark the connection `needs_reauth` (not authenticated) with `error_category` and a message.

        `category` is one of connectors.errors.AUTH_ERROR_CATEGORIES. The next successful
        authentication (connectors.authorization) sets the connection back to active.
        """
        from django.utils import timezone

        from airweave.collections.models import SourceConnection

        self._rows().update(status=SourceConnection.Status.NEEDS_REAUTH, is_authenticated=False,
                            error_category=category[:64], error_message=message[:2000], modified_at=timezone.now())
