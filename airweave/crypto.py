"""Encryption of credentials at rest with MultiFernet (cryptography), so keys can rotate.

Keys come from AIRWEAVE_FERNET_KEYS, newest first: the first encrypts, every key decrypts.
Without any, one key derived from SECRET_KEY is used so that development works with no setup;
that derived key also stays last in the list when keys are configured, so credentials written
before the first key was set still decrypt until `manage.py reencrypt_credentials` moves them
to the newest key.

Rotation: put a new key first (`AIRWEAVE_FERNET_KEYS=new,old`), run the command, then drop the
old key. Secrets never appear in logs or error messages: failures say which row, not what it holds.
"""
from __future__ import annotations

import base64
import hashlib
import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _derived_key() -> str:
    derived = hashlib.sha256(("airweave-credentials:" + settings.SECRET_KEY).encode()).digest()
    return base64.urlsafe_b64encode(derived).decode()


def _fernet() -> MultiFernet:
    keys = [k.strip() for k in settings.AIRWEAVE_FERNET_KEYS if k.strip()]
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise ImproperlyConfigured(f"AIRWEAVE_FERNET_KEYS: key {position} is not a Fernet key (32 url-safe "
                                       "base64-encoded bytes; make one with `manage.py reencrypt_credentials "
                                       "--generate-key`)") from None
    derived = _derived_key()
    if derived not in keys:
        fernets.append(Fernet(derived))
    return MultiFernet(fernets)


def generate_key() -> str:
    """A new random Fernet key (url-safe base64 text) for AIRWEAVE_FERNET_KEYS."""
    return Fernet.generate_key().decode()


def encrypt_json(data: dict) -> str:
    """Encrypt a JSON-serialisable dict with the newest key; returns a Fernet token (str). Empty dict → ""."""
    if not data:
        return ""
    return _fernet().encrypt(json.dumps(data).encode()).decode()


def decrypt_json(token: str) -> dict:
    """Decrypt a token made by encrypt_json with any configured key. Raises InvalidToken when none fits."""
    if not token:
        return {}
    return json.loads(_fernet().decrypt(token.encode()))


def rotate_token(token: str) -> str:
    """Re-encrypt `token` under the newest key (its content and timestamp unchanged). "" stays "".

    Raises InvalidToken when no configured key decrypts it.
    """
    if not token:
        return ""
    return _fernet().rotate(token.encode()).decode()


__all__ = ["encrypt_json", "decrypt_json", "rotate_token", "generate_key", "InvalidToken"]
