"""SQL databases: PostgreSQL, MySQL/MariaDB and SQLite, read through SQLAlchemy Core.

The chosen tables' rows become entities. Config (all three): `tables` ("orders" or, on
PostgreSQL, "sales.orders"), `columns` ("table.column" to index; a table with none listed gives
all its columns), `title_columns` ("table.column" naming each row), `updated_at_column` and
`created_at_column` (a column name looked up on every table). PostgreSQL and MySQL take `host`
(a name, an address, or a Unix socket folder), `port`, `database` and, as credentials,
`username` and `password` (a secret: encrypted at rest, never returned); SQLite takes `path`.
Tables and columns are read by reflection and quoted by SQLAlchemy: config never becomes SQL text.

Entities: SQLRowEntity, `entity_id` = `<table>:<primary key value>` (several key columns
joined by `/`, each URL-quoted); name = the title column's value, else `<table> #<key>`;
breadcrumbs database → table; text = `column: value` lines (binary values left out);
`raw_source_fields` = {database, table, primary_key, row} with the row's JSON-safe values;
`created_at` / `updated_at` from the configured columns (naive times read as UTC).

Incremental by the updated-at column: the cursor keeps, per table, the highest value synced;
the next run reads rows with a value at or above it (rows sharing the last value are read
again and kept by their hash). Tables without the column are read whole every run. A run with
a cursor is not a full listing: deletions are found by listing every table's primary keys
(one cheap query per table), so deleted rows — and the rows of tables removed from the config —
are deleted. A table without a primary key is refused (rows need stable ids).
"""
from __future__ import annotations

import datetime as dt
import decimal
import logging
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, SourceError
from connectors.http.errors import BlockedAddress
from connectors.http.ssrf import check_host, private_hosts_allowed, resolve_allowed
from connectors.converters._common import json_safe
from connectors.registry import source
from connectors.sources._export_files import validate_local_path
from connectors.sources._saas import parse_time

logger = logging.getLogger(__name__)

FETCH_BATCH = 1000
MAX_VALUE_CHARS = 100_000


@dataclass
class SQLRowEntity(BaseEntity):
    """One row of a table. `text` holds the `column: value` lines."""

    table: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        if not self.text.strip():
            raise SkipEntity("empty: no text in the row's indexed columns")
        return self.text


COMMON_FIELDS = (
    ConfigField("tables", "Tables", "array", "Tables to index, e.g. [\"articles\", \"faq\"] (on PostgreSQL "
                "\"schema.table\" for another schema than public).", required=True, items_type="string"),
    ConfigField("columns", "Columns", "array", "Columns to index as \"table.column\"; a table with none listed "
                "is indexed with all its columns.", items_type="string"),
    ConfigField("title_columns", "Title columns", "array", "The column naming each row, as \"table.column\" "
                "(one per table).", items_type="string"),
    ConfigField("updated_at_column", "Updated-at column", "string", "A column holding each row's last change "
                "time (e.g. updated_at): tables that have it sync incrementally."),
    ConfigField("created_at_column", "Created-at column", "string", "A column holding each row's creation time."),
)
SERVER_FIELDS = (
    ConfigField("host", "Host", "string", "Server host name or address, or its Unix socket (PostgreSQL: the "
                "socket's folder; MySQL: the .sock file or its folder).",
                required=True),
    ConfigField("database", "Database", "string", "The database to read.", required=True),
)
SERVER_AUTH = (
    ConfigField("username", "Username", "string", "A user that may SELECT the tables.", required=True),
    ConfigField("password", "Password", "string", "Its password.", is_secret=True),
)


class SQLSource(BaseSource):
    """Shared behaviour of the SQL sources (not registered itself)."""

    dialect = ""

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._full = True
        self._cursor: dict = {}
        self._present: set[str] | None = None

    # -- config ------------------------------------------------------------------------

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        tables = [t.strip() for t in out["tables"] if t.strip()]
        if not tables:
            raise ValueError("config field 'tables' must name at least one table, e.g. [\"articles\"]")
        out["tables"] = list(dict.fromkeys(tables))
        for name in ("columns", "title_columns"):
            refs = [c.strip() for c in out.get(name) or [] if c.strip()]
            for ref in refs:
                table, _, column = ref.rpartition(".")
                if not table or not column:
                    raise ValueError(f"config field '{name}': {ref!r} must be \"table.column\"")
                if table not in out["tables"]:
                    raise ValueError(f"config field '{name}': {ref!r} names a table not in 'tables'")
            if name in out:
                out[name] = refs
        for name in ("updated_at_column", "created_at_column"):
            if name in out:
                out[name] = out[name].strip() or None
                if out[name] is None:
                    del out[name]
        return out

    # -- the contract -------------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return self._full

    def next_cursor(self) -> dict:
        return {"tables": self._cursor}

    def present_entity_ids(self) -> set[str] | None:
        """Ids of every row of the configured tables (listed after an incremental run)."""
        return self._present

    def engine(self):
        raise NotImplementedError

    def database_name(self) -> str:
        raise NotImplementedError

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        """Rows of every configured table; see the module docstring."""
        import sqlalchemy as sa

        previous = (cursor or {}).get("tables")
        self._full = previous is None
        self._present = None if self._full else set()
        self._cursor = {}
        engine = self.engine()
        try:
            with engine.connect() as conn:
                for name in self.config["tables"]:
                    table = self._reflect(conn, name)
                    yield from self._rows(conn, name, table, (previous or {}).get(name))
                    if self._present is not None:
                        self._present |= self._ids(conn, name, table)
        except sa.exc.OperationalError as exc:
            raise SourceError(f"cannot read the {self.dialect} database: {_short(exc)}",
                              category=_category(exc)) from exc
        except sa.exc.SQLAlchemyError as exc:
            raise SourceError(f"{self.dialect} error: {_short(exc)}", category="source_error") from exc
        finally:
            engine.dispose()

    # -- reading -----------------------------------------------------------------------

    def _reflect(self, conn, name: str):
        import sqlalchemy as sa

        schema, _, table_name = name.rpartition(".")
        try:
            table = sa.Table(table_name, sa.MetaData(), schema=schema or None, autoload_with=conn)
        except sa.exc.NoSuchTableError:
            raise SourceError(f"table {name!r} not found in database {self.database_name()!r}",
                              category="config_error") from None
        if not list(table.primary_key.columns):
            raise SourceError(f"table {name!r} has no primary key: rows need one for stable ids",
                              category="config_error")
        wanted = [ref.rpartition(".")[2] for ref in self.config.get("columns") or [] if ref.rpartition(".")[0] == name]
        missing = [c for c in wanted if c not in table.c]
        if missing:
            raise SourceError(f"table {name!r} has no column(s) {', '.join(missing)}", category="config_error")
        return table

    def _key(self, name: str, table, row) -> str:
        values = [row[c.name] for c in table.primary_key.columns]
        return f"{name}:" + "/".join(quote(_scalar_text(v), safe="") for v in values)

    def _ids(self, conn, name: str, table) -> set[str]:
        import sqlalchemy as sa

        keys = list(table.primary_key.columns)
        result = conn.execution_options(stream_results=True, yield_per=FETCH_BATCH).execute(sa.select(*keys))
        return {self._key(name, table, row) for row in result.mappings()}

    def _rows(self, conn, name: str, table, since: dict | None) -> Iterator[SQLRowEntity]:
        import sqlalchemy as sa

        wanted = [ref.rpartition(".")[2] for ref in self.config.get("columns") or [] if ref.rpartition(".")[0] == name]
        titles = [ref.rpartition(".")[2] for ref in self.config.get("title_columns") or []
                  if ref.rpartition(".")[0] == name]
        updated_col = self.config.get("updated_at_column")
        created_col = self.config.get("created_at_column")
        updated = table.c[updated_col] if updated_col and updated_col in table.c else None
        created = table.c[created_col] if created_col and created_col in table.c else None
        content = [table.c[c] for c in wanted] if wanted else list(table.c)
        needed = {c.name: c for c in content}
        for col in [*table.primary_key.columns, *(table.c[t] for t in titles if t in table.c), updated, created]:
            if col is not None:
                needed.setdefault(col.name, col)
        query = sa.select(*needed.values())
        if updated is not None:
            if since and since.get("value") is not None:
                query = query.where(updated >= _cursor_value(since))
            query = query.order_by(updated.asc())
        highest = since
        crumbs = [Breadcrumb(f"database:{self.database_name()}", self.database_name(), "SQLDatabase"),
                  Breadcrumb(f"table:{name}", name, "SQLTable")]
        result = conn.execution_options(stream_results=True, yield_per=FETCH_BATCH).execute(query)
        for row in result.mappings():
            key = self._key(name, table, row)
            values = {c: row[c] for c in needed}
            lines = [f"{c}: {_text(values[c])}" for c in (col.name for col in content)
                     if values[c] is not None and _text(values[c])]
            title = next((_text(values[t]) for t in titles if t in values and values[t] is not None), "")
            pk = {c.name: json_safe(row[c.name]) for c in table.primary_key.columns}
            changed = _as_datetime(values.get(updated.name)) if updated is not None else None
            if updated is not None and values.get(updated.name) is not None:
                highest = _cursor_entry(values[updated.name])
            yield SQLRowEntity(
                entity_id=key, name=(title or f"{name} #{key.split(':', 1)[1]}")[:500], breadcrumbs=crumbs,
                created_at=_as_datetime(values.get(created.name)) if created is not None else None,
                updated_at=changed,
                raw_source_fields={"database": self.database_name(), "table": name, "primary_key": pk,
                                   "row": {c: json_safe(_jsonable(values[c])) for c in values}},
                table=name, text=f"{name}\n" + "\n".join(lines),
            )
        if updated is not None and highest is not None:
            self._cursor[name] = highest


def _text(value) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ""
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    text = " ".join(str(value).split()) if not isinstance(value, str) else value.strip()
    return text[:MAX_VALUE_CHARS].replace("\x00", "")


def _jsonable(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str) and len(value) > 2000:
        return value[:2000] + "…"
    return value


def _scalar_text(value) -> str:
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value.normalize(), "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def _as_datetime(value) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    if isinstance(value, str):
        return parse_time(value, digit_strings_are_epochs=False)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return dt.datetime.fromtimestamp(value, tz=dt.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _cursor_entry(value) -> dict:
    if isinstance(value, dt.datetime):
        return {"type": "datetime", "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {"type": "date", "value": value.isoformat()}
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return {"type": "number", "value": str(value)}
    return {"type": "string", "value": str(value)}


def _cursor_value(entry: dict):
    kind, value = entry.get("type"), entry.get("value")
    if kind == "datetime":
        return dt.datetime.fromisoformat(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    if kind == "number":
        return decimal.Decimal(value)
    return value


def _short(exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return " ".join(text.split())[:300]


def _category(exc: Exception) -> str:
    text = _short(exc).lower()
    if "password" in text or "access denied" in text or "authentication" in text:
        return "auth_error"
    return "connection_error"


def _check_server(host: str) -> None:
    """The SSRF guard for a database server a user supplied: a Unix socket folder is as local as
    loopback. Raises BlockedAddress unless AIRWEAVE_ALLOW_PRIVATE_HOSTS allows it."""
    if host.startswith("/"):
        if not private_hosts_allowed():
            raise BlockedAddress(f"refused to connect to the local socket {host}")
        return
    check_host(host)


def check_server_config(out: dict, default_port: int) -> dict:
    """Check (in place) the `host`, `port` and `database` of a validated server config and return
    it: a host without spaces that the SSRF guard allows, a port in 1-65535, a database name.
    Raises ValueError naming the field to fix."""
    host = out["host"].strip()
    if not host or any(c.isspace() for c in host):
        raise ValueError("config field 'host' must be a host name, an address or a socket folder")
    try:
        _check_server(host)
    except BlockedAddress as exc:
        raise ValueError(f"config field 'host': {exc} (AIRWEAVE_ALLOW_PRIVATE_HOSTS allows it)") from None
    out["host"] = host
    port = out.get("port", default_port)
    if not 1 <= port <= 65535:
        raise ValueError("config field 'port' must be between 1 and 65535")
    if not out["database"].strip():
        raise ValueError("config field 'database' must not be empty")
    return out


class _ServerSQLSource(SQLSource):
    driver = ""
    default_port = 0

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        return check_server_config(super().validate_config(config, for_api=for_api), cls.default_port)

    def database_name(self) -> str:
        return self.config["database"]

    def url_query(self) -> dict:
        return {}

    def engine(self):
        import sqlalchemy as sa

        host = self.config["host"]
        query = self.url_query()
        socket_folder = host.startswith("/")
        _check_server(host)  # the SSRF guard: BlockedAddress for private addresses and local sockets
        if not socket_folder:
            resolve_allowed(host, int(self.config.get("port") or self.default_port))
        if socket_folder:
            if self.dialect == "mysql" and not host.endswith(".sock"):
                host = f"{host.rstrip('/')}/mysqld.sock"
            query[self.socket_param] = host
            if self.dialect == "postgresql" and self.config.get("port"):
                query["port"] = str(self.config["port"])  # names the socket file (.s.PGSQL.<port>)
        url = sa.URL.create(self.driver, username=self.credentials.get("username") or None,
                            password=self.credentials.get("password") or None,
                            host=None if socket_folder else host,
                            port=None if socket_folder else int(self.config.get("port") or self.default_port),
                            database=self.config["database"], query=query)
        return sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args=self.connect_args())

    def connect_args(self) -> dict:
        return {}


@source(
    name="PostgreSQL",
    short_name="postgresql",
    description="Rows of chosen PostgreSQL tables, synced incrementally by an updated-at column.",
    auth_methods=("direct",),
    labels=("Database",),
    entity_types=(SQLRowEntity,),
    config_fields=(*SERVER_FIELDS[:1],
                   ConfigField("port", "Port", "integer", "The server's port.", default=5432),
                   *SERVER_FIELDS[1:],
                   ConfigField("sslmode", "SSL mode", "string", "libpq sslmode.", default="prefer",
                               enum_values=("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
                   *COMMON_FIELDS),
    auth_fields=SERVER_AUTH,
)
class PostgreSQLSource(_ServerSQLSource):
    """See the module docstring. Connects with psycopg 3."""

    dialect = "postgresql"
    driver = "postgresql+psycopg"
    default_port = 5432
    socket_param = "host"

    def url_query(self) -> dict:
        return {"sslmode": self.config.get("sslmode") or "prefer"}

    def connect_args(self) -> dict:
        return {"connect_timeout": 30}


@source(
    name="MySQL",
    short_name="mysql",
    description="Rows of chosen MySQL or MariaDB tables, synced incrementally by an updated-at column.",
    auth_methods=("direct",),
    labels=("Database",),
    entity_types=(SQLRowEntity,),
    config_fields=(*SERVER_FIELDS[:1],
                   ConfigField("port", "Port", "integer", "The server's port.", default=3306),
                   *SERVER_FIELDS[1:], *COMMON_FIELDS),
    auth_fields=SERVER_AUTH,
)
class MySQLSource(_ServerSQLSource):
    """See the module docstring. Connects with PyMySQL (pure Python), utf8mb4."""

    dialect = "mysql"
    driver = "mysql+pymysql"
    default_port = 3306
    socket_param = "unix_socket"

    def url_query(self) -> dict:
        return {"charset": "utf8mb4"}

    def connect_args(self) -> dict:
        return {"connect_timeout": 30}


@source(
    name="SQLite",
    short_name="sqlite",
    description="Rows of chosen tables of an SQLite database file, synced incrementally by an updated-at column.",
    auth_methods=("direct",),
    labels=("Database",),
    entity_types=(SQLRowEntity,),
    config_fields=(ConfigField("path", "Database file", "string", "The SQLite file on this server (opened "
                               "read-only).", required=True), *COMMON_FIELDS),
)
class SQLiteSource(SQLSource):
    """See the module docstring. The file is opened read-only."""

    dialect = "sqlite"

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        path = validate_local_path(out["path"], for_api=for_api)
        if not path.is_file():
            raise ValueError(f"config field 'path': {out['path']!r} is not a file")
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                raise ValueError(f"config field 'path': {out['path']!r} is not an SQLite database")
        out["path"] = str(path)
        return out

    def database_name(self) -> str:
        return Path(self.config["path"]).name

    def engine(self):
        import sqlalchemy as sa

        uri = Path(self.config["path"]).as_uri() + "?mode=ro"
        return sa.create_engine("sqlite://", poolclass=sa.pool.NullPool,
                                creator=lambda: sqlite3.connect(uri, uri=True))
