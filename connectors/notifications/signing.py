"""The one place signatures are computed and compared (constant time) for change notifications."""
from __future__ import annotations

import base64
import hashlib
import hmac
import time

from connectors.notifications.base import NotificationRejected

_ALGORITHMS = {"sha256": hashlib.sha256, "sha1": hashlib.sha1}


def hmac_digest(secret: str | bytes, message: bytes, *, algorithm: str = "sha256") -> bytes:
    """The raw HMAC of `message` keyed with `secret` (str secrets are UTF-8). Raises KeyError on an unknown algorithm."""
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, message, _ALGORITHMS[algorithm]).digest()


def hmac_hex(secret: str | bytes, message: bytes, *, algorithm: str = "sha256") -> str:
    """Lower-case hex of `hmac_digest`."""
    return hmac_digest(secret, message, algorithm=algorithm).hex()


def hmac_base64(secret: str | bytes, message: bytes, *, algorithm: str = "sha256") -> str:
    """Standard base64 of `hmac_digest`."""
    return base64.b64encode(hmac_digest(secret, message, algorithm=algorithm)).decode()


def require_match(received: str | None, *expected: str, what: str = "signature") -> None:
    """Raise NotificationRejected unless `received` equals one of `expected` (constant-time compare each)."""
    if not received:
        raise NotificationRejected(f"the {what} is missing")
    ok = False
    for value in expected:
        ok |= hmac.compare_digest(received.strip().encode(), value.encode())
    if not ok:
        raise NotificationRejected(f"the {what} does not match")


def require_fresh(timestamp_seconds, *, tolerance: float, what: str = "timestamp", now: float | None = None) -> float:
    """The timestamp as float seconds; raises NotificationRejected when missing, unparsable or
    more than `tolerance` seconds away from now (a replayed or delayed call)."""
    try:
        value = float(timestamp_seconds)
    except (TypeError, ValueError):
        raise NotificationRejected(f"the {what} is missing or not a number") from None
    if abs((time.time() if now is None else now) - value) > tolerance:
        raise NotificationRejected(f"the {what} is more than {int(tolerance)} s old (a replay?)")
    return value
