"""The registry of sources: `@source(...)` declares one, `get_source` finds it by short name."""
from __future__ import annotations

import importlib
import pkgutil

from connectors.base import BaseSource, SourceError

_SOURCES: dict[str, type[BaseSource]] = {}


def source(*, name: str, short_name: str, **capabilities):
    """Class decorator registering a BaseSource subclass under `short_name`.

    `capabilities` are BaseSource class attributes (auth_methods, config_fields, ...); a source
    declaring `notifications` (a change-notification handler) is `supports_continuous`.
    Raises ValueError on a duplicate short name or an unknown capability.
    """

    def register(cls: type[BaseSource]) -> type[BaseSource]:
        if short_name in _SOURCES and _SOURCES[short_name] is not cls:
            raise ValueError(f"source short_name '{short_name}' is already registered")
        for key, value in capabilities.items():
            if not hasattr(BaseSource, key):
                raise ValueError(f"unknown source capability '{key}' on {cls.__name__}")
            setattr(cls, key, value)
        if capabilities.get("notifications") and "supports_continuous" not in capabilities:
            cls.supports_continuous = True  # a vendor that notifies changes keeps the collection current
        cls.name = name
        cls.short_name = short_name
        _SOURCES[short_name] = cls
        return cls

    return register


def autodiscover() -> None:
    """Import every module under connectors/sources so their decorators run."""
    import connectors.sources as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")


def get_source(short_name: str) -> type[BaseSource]:
    """Return the source class for `short_name`. Raises KeyError when there is none."""
    return _SOURCES[short_name]


def all_sources() -> list[type[BaseSource]]:
    """Every registered source, sorted by short name."""
    return [_SOURCES[k] for k in sorted(_SOURCES)]


def source_for_connection(connection) -> BaseSource:
    """An instance of `connection`'s source with its config, decrypted credentials and run context.

    The context carries the organization and connection ids (rate-limit keys) and a credential
    store that persists refreshed tokens and marks the connection `needs_reauth`. Raises
    KeyError for an unknown source, and SourceError ("config_error") when no key of
    AIRWEAVE_FERNET_KEYS decrypts its credentials. Call `close()` on the instance when done.
    """
    from airweave.crypto import InvalidToken, decrypt_json
    from connectors.auth.store import ConnectionCredentialStore
    from connectors.base import SourceContext

    try:
        stored = decrypt_json(connection.encrypted_credentials)
    except InvalidToken:
        raise SourceError("the credentials of this connection decrypt with none of AIRWEAVE_FERNET_KEYS: a process "
                          "runs without the key they were written with (restart it with every key of the rotation, "
                          "see the README's Credentials at rest)", category="config_error") from None
    credentials = {k: v for k, v in stored.items() if not k.startswith("_")}
    source = get_source(connection.short_name)(connection.config, credentials)
    source.context = SourceContext(organization_id=connection.organization_id, source_connection_id=connection.id,
                                   credential_store=ConnectionCredentialStore(connection.id))
    return source
