"""The database is unavailable: what every process recognises, and what every face answers.

When PostgreSQL stops (a restart, a failover, the embedded server killed), Django raises
`OperationalError` (cannot connect, the server closed the connection) or `InterfaceError` (a
connection already closed). A request that meets one answers 503 with a message that says so —
JSON `{"detail": ...}` with `Retry-After` on the API, a short page on the web UI, an `error`
event on a stream — never a 500 or a debug page. Connections are opened per request, so the web
process recovers by itself as soon as the server is back. Sync jobs wait for the database to
come back before recording how they ended (connectors/sync/pipeline.py).
"""
from __future__ import annotations

from django.db import InterfaceError, OperationalError

DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_UNAVAILABLE = "The database is unavailable: try again in a few seconds"
RETRY_AFTER_SECONDS = 5


def database_unavailable(exc: BaseException | None) -> bool:
    """True when `exc` (or the exception it was raised from) says the database cannot be reached."""
    while exc is not None:
        if isinstance(exc, DATABASE_ERRORS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
