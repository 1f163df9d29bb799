"""Encryption of credentials at rest with MultiFernet (cryptography), so keys can rotate.

Keys come from AIRWEAVE_FERNET_KEYS (newest first); without any, one key is derived from
SECRET_KEY so that development works with no setup.
"""
from __future__ import annotations

import base64
import hashlib
import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


def _fernet() -> MultiFernet:
    keys = list(settings.AIRWEAVE_FERNET_KEYS)
    if not keys:
        derived = hashlib.sha256(("airweave-credentials:" + settings.SECRET_KEY).encode()).digest()
        keys = [base64.urlsafe_b64encode(derived).decode()]
    return MultiFernet([Fernet(k) for k in keys])


def encrypt_json(data: dict) -> str:
    """Encrypt a JSON-serialisable dict; returns a Fernet token (str). Empty dict → ""."""
    if not data:
        return ""
    return _fernet().encrypt(json.dumps(data).encode()).decode()


def decrypt_json(token: str) -> dict:
    """Decrypt a token made by encrypt_json. Raises InvalidToken when no key fits."""
    if not token:
        return {}
    return json.loads(_fernet().decrypt(token.encode()))


__all__ = ["encrypt_json", "decrypt_json", "InvalidToken"]
