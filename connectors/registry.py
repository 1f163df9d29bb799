"""The registry of sources: `@source(...)` declares one, `get_source` finds it by short name.

Sources come from two places: the modules under `connectors/sources/` (built in), and installed
Python packages that declare an entry point in the group `airweave.sources` (plugins, see
docs/connectors.md "A source in its own package"). An entry point names a module (whose
`@source` classes register when it is imported) or a `BaseSource` subclass. A plugin that fails
to import, declares a short name already taken, or names something that is not a source is
logged and skipped: it never stops the server from starting. `plugin_errors()` says what was
skipped and why.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import pkgutil
from types import ModuleType

from connectors.base import BaseSource, SourceError

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "airweave.sources"

_SOURCES: dict[str, type[BaseSource]] = {}
# entry point "name = value" -> why it was skipped; filled by discover_plugins().
_PLUGIN_ERRORS: dict[str, str] = {}
# entry point "name = value" -> the short names it brought (so discovery can run twice).
_PLUGIN_SOURCES: dict[str, list[str]] = {}


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
    """Import every module under connectors/sources so their decorators run, then the plugins.

    Built-in sources come first, so a plugin can never take a built-in short name.
    """
    import connectors.sources as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")
    discover_plugins()


def discover_plugins(entry_points=None) -> list[type[BaseSource]]:
    """Load the sources that installed packages declare in the entry point group `airweave.sources`.

    `entry_points` defaults to `importlib.metadata.entry_points(group="airweave.sources")`
    (tests pass their own). Each entry point may name a module (every `@source` class it
    registers counts) or a BaseSource subclass (registered with `@source` at import, or carrying
    `name` and `short_name` itself, in which case it is registered here). Returns the source
    classes the plugins brought, in entry point order. Raises nothing: a plugin that fails is
    logged with its traceback, recorded in `plugin_errors()`, and any source it had registered
    before failing is removed again.
    """
    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    loaded: list[type[BaseSource]] = []
    for ep in entry_points:
        label = f"{ep.name} = {ep.value}"
        if label in _PLUGIN_SOURCES and all(name in _SOURCES for name in _PLUGIN_SOURCES[label]):
            loaded += [_SOURCES[name] for name in _PLUGIN_SOURCES[label]]
            continue
        before = dict(_SOURCES)
        try:
            found = _plugin_sources(ep.load(), before)
        except Exception as exc:  # a third-party package may raise anything at import
            for short_name in set(_SOURCES) - set(before):
                _SOURCES.pop(short_name)
            _PLUGIN_ERRORS[label] = f"{type(exc).__name__}: {exc}"
            logger.exception("source plugin %r skipped: %s", label, _PLUGIN_ERRORS[label])
            continue
        _PLUGIN_ERRORS.pop(label, None)
        _PLUGIN_SOURCES[label] = [cls.short_name for cls in found]
        for cls in found:
            cls.plugin = _distribution_of(ep)
        loaded += found
        logger.info("source plugin %r: %s", label, ", ".join(cls.short_name for cls in found))
    return loaded


def _plugin_sources(obj, before: dict[str, type[BaseSource]]) -> list[type[BaseSource]]:
    """The sources one entry point brought. Raises ValueError when it brought none or took a taken name."""
    if inspect.isclass(obj) and issubclass(obj, BaseSource):
        if _SOURCES.get(obj.short_name) is not obj:
            if not obj.short_name or not obj.name:
                raise ValueError(f"{obj.__name__} is neither declared with @source nor has name and short_name")
            source(name=obj.name, short_name=obj.short_name)(obj)
        if before.get(obj.short_name) not in (None, obj):
            raise ValueError(f"source short_name '{obj.short_name}' is already registered")
        return [obj]
    if isinstance(obj, ModuleType):
        found = [cls for name, cls in _SOURCES.items() if before.get(name) is not cls]
        if not found:
            raise ValueError(f"module {obj.__name__} registers no source (no @source class, or only taken names)")
        return found
    raise ValueError(f"the entry point names {obj!r}, which is neither a module nor a BaseSource subclass")


def _distribution_of(ep) -> str:
    """'name version' of the distribution that declared `ep` ('' when unknown)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ""
    return f"{dist.metadata['Name']} {dist.version}"


def plugin_errors() -> dict[str, str]:
    """The plugins skipped at discovery: {"<entry point name> = <value>": "<ExceptionType>: message"}."""
    return dict(_PLUGIN_ERRORS)


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
    SourceError ("config_error") for a source not installed on this server (a plugin package
    removed or failing to import) and when no key of AIRWEAVE_FERNET_KEYS decrypts its
    credentials. Call `close()` on the instance when done.
    """
    from airweave.crypto import InvalidToken, decrypt_json
    from connectors.auth.store import ConnectionCredentialStore
    from connectors.base import SourceContext

    try:
        stored = decrypt_json(connection.encrypted_credentials)
    except InvalidToken:
        raise SourceError("the credentials of this connection decrypt with none of AIRWEAVE_FERNET_KEYS: a process "
                          "runs without the key they were written with (restart it with every key of the rotation, "
                          "see docs/accounts.md, Credentials at rest)", category="config_error") from None
    credentials = {k: v for k, v in stored.items() if not k.startswith("_")}
    try:
        source_cls = get_source(connection.short_name)
    except KeyError:
        raise SourceError(f"source '{connection.short_name}' is not installed on this server (a plugin package "
                          "missing or failing to import: see the server's log at start)",
                          category="config_error") from None
    source = source_cls(connection.config, credentials)
    source.context = SourceContext(organization_id=connection.organization_id, source_connection_id=connection.id,
                                   credential_store=ConnectionCredentialStore(connection.id))
    return source
