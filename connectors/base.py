"""The source contract: what a source declares, and the entities it yields.

A source is one class under `connectors/sources/`, decorated with `@source(...)`. It declares
its capabilities as data (auth methods, typed config and auth fields, continuous, federated,
access control) and yields entities from `generate_entities(cursor)`. The sync pipeline decides
what to do with them; a source never touches the database.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, ClassVar, Container, Iterable, Iterator

# Re-exported: the errors are part of the contract every source imports from here.
from connectors.errors import AUTH_ERROR_CATEGORIES, AuthFailure, SkipEntity, SourceError  # noqa: F401


@dataclass(frozen=True)
class ConfigField:
    """One typed field of a source's config or auth declaration (docs/api.md ConfigField)."""

    name: str
    title: str
    type: str = "string"  # "string" | "integer" | "boolean" | "array" | "number"
    description: str = ""
    required: bool = False
    items_type: str | None = None
    is_secret: bool = False
    enum_values: tuple[str, ...] | None = None
    default: Any = None

    def as_dict(self) -> dict:
        out = {"name": self.name, "title": self.title, "description": self.description or None,
               "type": self.type, "required": self.required, "is_secret": self.is_secret}
        if self.items_type:
            out["items_type"] = self.items_type
        if self.enum_values:
            out["enum_values"] = list(self.enum_values)
        return out


@dataclass(frozen=True)
class Breadcrumb:
    """One ancestor of an entity (a folder, a page, a channel)."""

    entity_id: str
    name: str
    entity_type: str

    def as_dict(self) -> dict:
        return {"entity_id": self.entity_id, "name": self.name, "entity_type": self.entity_type}


@dataclass
class BaseEntity:
    """An item of a source. `entity_id` is stable across runs and unique within the connection.

    Subclasses name the entity type (their class name) and say how their text is obtained:
    `textual_representation()` for structured items, or a file to convert (FileEntity).

    Access (read only for sources that declare `supports_access_control`; the entities of any
    other source are visible to the whole organization whatever these fields say):
    `access_viewers` holds principals, `user:<email>` or `group:<group id>` with the source's
    own group id (the sync namespaces it per connection); `access_is_public` True opens the
    entity to the whole organization. Left at None with no viewers, the entity is closed:
    only organization-wide callers see it.
    """

    entity_id: str
    name: str
    breadcrumbs: list[Breadcrumb] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    web_url: str = ""
    url: str = ""
    raw_source_fields: dict = field(default_factory=dict)
    access_viewers: list[str] = field(default_factory=list)
    access_is_public: bool | None = None

    # Fields left out of the content hash because they change without the content changing.
    volatile_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def entity_type(cls) -> str:
        return cls.__name__

    def textual_representation(self) -> str:
        raise NotImplementedError

    def hash_payload(self) -> dict:
        """The fields whose change means the entity must be re-indexed."""
        payload = {
            "type": self.entity_type(),
            "name": self.name,
            "breadcrumbs": [b.as_dict() for b in self.breadcrumbs],
            "web_url": self.web_url,
            "raw_source_fields": self.raw_source_fields,
            "access": [sorted(self.access_viewers), self.access_is_public],
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }
        for name in self.volatile_fields:
            payload.pop(name, None)
        return payload

    def content_hash(self) -> str:
        """SHA-256 (hex) of `hash_payload()` plus the entity's content."""
        digest = hashlib.sha256(json.dumps(self.hash_payload(), sort_keys=True, default=str).encode())
        self.update_hash_with_content(digest)
        return digest.hexdigest()

    def update_hash_with_content(self, digest) -> None:
        digest.update(self.textual_representation().encode("utf-8", "replace"))


@dataclass
class FileEntity(BaseEntity):
    """An entity whose content is a file on disk; converted to text by `connectors.converters`."""

    path: Path | None = None
    size: int = 0

    volatile_fields: ClassVar[tuple[str, ...]] = ("updated_at",)

    def update_hash_with_content(self, digest) -> None:
        with open(self.path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)


@dataclass
class BlobEntity(BaseEntity):
    """An entity whose content is a file held elsewhere than on disk: a zip member, a git blob,
    a mail attachment. `load()` returns its bytes (called once to hash, once to convert);
    `file_name` picks the converter by its extension; `size` is in bytes (checked against
    AIRWEAVE_MAX_FILE_BYTES before anything is loaded)."""

    file_name: str = ""
    size: int = 0
    load: Callable[[], bytes] | None = field(default=None, repr=False, compare=False)

    volatile_fields: ClassVar[tuple[str, ...]] = ("updated_at",)

    def read_bytes(self) -> bytes:
        """The content. Raises SkipEntity when it cannot be read."""
        if self.load is None:
            raise SkipEntity("unreadable: no content")
        try:
            return self.load()
        except SkipEntity:
            raise
        except Exception as exc:  # zip, git and mail readers raise many types
            raise SkipEntity(f"unreadable: {type(exc).__name__}: {exc}") from exc

    def update_hash_with_content(self, digest) -> None:
        digest.update(self.read_bytes())


@dataclass
class UnreadableEntity(BaseEntity):
    """Stands for an item that a source found but could not read (a broken day file, an
    unparsable message): the pipeline counts it as skipped with `reason`, never indexes it."""

    reason: str = "unreadable"

    def hash_payload(self) -> dict:
        raise SkipEntity(self.reason)

    def textual_representation(self) -> str:
        raise SkipEntity(self.reason)


@dataclass(frozen=True)
class AccessMembership:
    """One member of one of a source's groups: `member` is `user:<email>` or `group:<group id>`
    (a group of the same source nested inside `group_id`). Ids are the source's own."""

    group_id: str
    member: str


@dataclass
class SourceContext:
    """Where a source instance runs: its organization and connection, and its credential store.

    Set on a source by whoever runs it (the sync pipeline, federated search) before the first
    `source.http` call. `credential_store` (connectors.auth.store.CredentialStore) persists
    refreshed tokens and marks the connection `needs_reauth`; None keeps credentials in memory.
    """

    organization_id: Any = None
    source_connection_id: Any = None
    credential_store: Any = None


class BaseSource:
    """Base class of every source. Subclasses are registered with `@source(...)`.

    Class attributes set by the decorator: `name`, `short_name`, `description`, `auth_methods`,
    `oauth_type`, `config_fields`, `auth_fields`, `labels`, `supports_continuous`, `notifications`,
    `federated_search`, `supports_access_control`, `mirrored_permissions`, `entity_types`, `rate_limit_level`,
    `rate_limit`, `base_url`.

    HTTP sources call `self.http` (a connectors.http.HttpClient, one per source instance, i.e.
    per sync run): timeouts, retries, rate limiting, SSRF guard and auth (`http_auth()`) happen
    underneath. See docs/connectors.md. The client is injected: passed as `http_client`, or built
    on first use by `http_client_factory`, which the connectors app installs at start together
    with `default_auth_factory` (this module stands below `http` and `auth` and imports neither).
    """

    name: ClassVar[str] = ""
    short_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    auth_methods: ClassVar[tuple[str, ...]] = ("direct",)
    oauth_type: ClassVar[str | None] = None
    requires_byoc: ClassVar[bool] = False
    config_fields: ClassVar[tuple[ConfigField, ...]] = ()
    auth_fields: ClassVar[tuple[ConfigField, ...]] = ()
    labels: ClassVar[tuple[str, ...]] = ()
    supports_continuous: ClassVar[bool] = False
    # The vendor's change-notification handler class (a connectors.notifications.base.NotificationHandler
    # subclass), or None; declaring one makes the source `supports_continuous` (docs/notifications.md).
    notifications: ClassVar[type | None] = None
    federated_search: ClassVar[bool] = False
    supports_access_control: ClassVar[bool] = False
    # What of the vendor's permission model a source mirrors (docs/access-control.md, the per-source
    # table): (permission, mirrored?) pairs in the source's own words, e.g. ("private repository
    # collaborators", True), ("branch protection", False). Shown by GET /sources.
    mirrored_permissions: ClassVar[tuple[tuple[str, bool], ...]] = ()
    supports_browse_tree: ClassVar[bool] = False
    supports_temporal_relevance: ClassVar[bool] = False
    # "org" (one budget for all connections of an organization to this service) | "connection"
    # | None (no limiter); `rate_limit` is the budget in the `limits` notation, e.g. "3/second".
    rate_limit_level: ClassVar[str | None] = None
    rate_limit: ClassVar[str | None] = None
    # Relative paths given to `self.http` are joined to this (may be a property on the instance
    # for services whose host the user supplies).
    base_url: ClassVar[str] = ""
    entity_types: ClassVar[tuple[type[BaseEntity], ...]] = ()
    # "<distribution> <version>" for a source an installed package brought through the entry point
    # group `airweave.sources` (connectors.registry.discover_plugins); "" for a built-in source.
    plugin: ClassVar[str] = ""

    # (source) -> HttpClient and (source) -> Auth: connectors.http.client_for_source and
    # connectors.auth.tokens.default_auth_for, installed by ConnectorsConfig.ready().
    http_client_factory: ClassVar[Callable[["BaseSource"], Any] | None] = None
    default_auth_factory: ClassVar[Callable[["BaseSource"], Any] | None] = None

    context: SourceContext | None = None
    _http = None

    def __init__(self, config: dict, credentials: dict | None = None, *, http_client=None):
        self.config = config
        self.credentials = credentials or {}
        if http_client is not None:
            self._http = http_client

    @property
    def http(self):
        """This run's HttpClient: the injected one, else built on first use from `context` and `http_auth()`.

        Raises RuntimeError when neither was given (the connectors app is not loaded).
        """
        if self._http is None:
            factory = BaseSource.http_client_factory
            if factory is None:
                raise RuntimeError("no HTTP client: pass http_client= or load the connectors app")
            self._http = factory(self)
        return self._http

    def close(self) -> None:
        """Release what the run held: the HTTP session and its downloaded files. Called by the pipeline."""
        if self._http is not None:
            self._http.close()
            self._http = None

    def http_headers(self) -> dict:
        """Headers sent with every request of `self.http` (e.g. an API version or media type)."""
        return {}

    def http_auth(self):
        """The auth of `self.http` (a connectors.auth.tokens.Auth); override for API keys.

        Default: OAuth 2 bearer tokens (refreshed) when the credentials hold `access_token`,
        OAuth 1 signatures when they hold `oauth_token` + `oauth_token_secret`, else none.
        """
        factory = BaseSource.default_auth_factory
        if factory is None:
            raise RuntimeError("no default auth: load the connectors app")
        return factory(self)

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        """Return `config` checked against `config_fields`, defaults filled in.

        Raises ValueError with a message naming the field to fix. `for_api` is True when the
        config comes from an API caller (sources may apply stricter rules then).
        """
        if not isinstance(config, dict):
            raise ValueError("config must be an object")
        known = {f.name: f for f in cls.config_fields}
        unknown = sorted(set(config) - set(known))
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)}; expected: {', '.join(known)}")
        out = {}
        for f in cls.config_fields:
            value = config.get(f.name, f.default)
            if value is None:
                if f.required:
                    raise ValueError(f"config field '{f.name}' is required ({f.title})")
                continue
            out[f.name] = _check_type(f, value)
        return out

    @classmethod
    def validate_auth(cls, credentials: dict) -> dict:
        """Return `credentials` checked against `auth_fields` (same rules as validate_config).

        Raises ValueError naming the field to fix.
        """
        if not isinstance(credentials, dict):
            raise ValueError("credentials must be an object")
        known = {f.name: f for f in cls.auth_fields}
        unknown = sorted(set(credentials) - set(known))
        if unknown:
            raise ValueError(f"unknown credential field(s): {', '.join(unknown)}; expected: "
                             f"{', '.join(known) or 'none'}")
        out = {}
        for f in cls.auth_fields:
            value = credentials.get(f.name, f.default)
            if value is None or value == "":
                if f.required:
                    raise ValueError(f"credential field '{f.name}' is required ({f.title})")
                continue
            out[f.name] = _check_type(f, value, kind="credential")
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        """Yield the source's entities. `cursor` is the last completed job's cursor (a dict).

        """
        raise NotImplementedError

    def generate_access_memberships(self) -> Iterable[AccessMembership] | None:
        """The source's group memberships, for sources that declare `supports_access_control`.

        Called once per sync job, before generate_entities. Return None (the default) when the
        source has no groups: stored memberships are left alone. Otherwise yield every
        membership: the listing replaces the connection's stored set as a whole (memberships
        not listed are deleted), so a source that cannot list them all must raise SourceError
        instead. Groups may contain groups; a user's groups are resolved at search time,
        through nesting, up to AIRWEAVE_ACCESS_GROUP_MAX_DEPTH levels.
        """
        return None

    @classmethod
    def federates(cls, config: dict | None) -> bool:
        """Whether a connection of this source with `config` is searched at query time (`search()`).

        Default: the class's `federated_search`. A source that can both sync and search at query
        time (Slack) makes it a per-connection choice, so one connection never answers the same
        item twice (once as a synced chunk, once as a federated result).
        """
        return bool(cls.federated_search)

    def search(self, query: str, limit: int) -> list[dict]:
        """Federated sources (`federated_search`) answer queries at search time.

        Returns up to `limit` results, best first, each shaped like a result of the pipeline
        endpoint (docs/api.md): at least `entity_id`, `name`, `textual_representation`; a source that
        declares `supports_access_control` adds `access: {viewers, is_public}` with the same
        meaning as on entities (no access list = closed). Raise on failure: the search goes on
        without this source.
        """
        raise NotImplementedError

    def next_cursor(self) -> dict:
        """The cursor to save when the job completes (after generate_entities is exhausted)."""
        return {}

    def is_full_listing(self) -> bool:
        """True when generate_entities listed everything, so absent entities are deletions."""
        return True

    def deleted_entity_ids(self) -> Iterable[str]:
        """Entity ids the service reported deleted during this run (incremental sources).

        Read by the pipeline after generate_entities is exhausted; ids it does not know are
        ignored. A full listing needs none of this: absent entities are deleted anyway.
        """
        return ()

    def present_entity_ids(self) -> Container[str] | None:
        """After a run that was not a full listing: what still exists at the source, from a
        cheap listing (a table's primary keys, a mailbox's Message-IDs), as anything answering
        `entity_id in ...`. Known entities not in it, and not listed this run, are deleted.
        None (the default): the source cannot tell, and only `deleted_entity_ids` deletes.
        """
        return None


_TYPE_CHECKS = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
}


def _check_type(f: ConfigField, value, kind: str = "config"):
    expected = _TYPE_CHECKS[f.type]
    if f.type in ("integer", "number") and isinstance(value, bool):
        raise ValueError(f"{kind} field '{f.name}' must be a {f.type}")
    if not isinstance(value, expected):
        raise ValueError(f"{kind} field '{f.name}' must be a {f.type}, got {type(value).__name__}")
    if f.type == "array" and f.items_type == "string" and not all(isinstance(v, str) for v in value):
        raise ValueError(f"{kind} field '{f.name}' must be an array of strings")
    if "\x00" in repr(value):
        raise ValueError(f"{kind} field '{f.name}' must not contain NUL characters")
    if f.enum_values and value not in f.enum_values:
        raise ValueError(f"{kind} field '{f.name}' must be one of {', '.join(f.enum_values)}")
    return value
