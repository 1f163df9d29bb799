"""The SQL sources against real servers: SQLite (a temp file), MariaDB (127.0.0.1:3306) and
PostgreSQL (a separate database on the embedded server)."""
from __future__ import annotations

import sqlite3
import uuid
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from django.conf import settings

from airweave.collections.models import Entity
from connectors.base import SourceError
from connectors.services import SourceConnectionError, source_connection_create, source_connection_update
from connectors.sources.sql import MySQLSource, PostgreSQLSource, SQLiteSource
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync



@pytest.fixture(autouse=True)
def _local_servers_allowed(settings):
    """The test servers are local; the SSRF guard refuses them unless allowed (tested below)."""
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True


T0 = datetime(2026, 3, 1, 9, 0, 0)
SCHEMA = """
CREATE TABLE articles (id INTEGER PRIMARY KEY, title VARCHAR(200), body TEXT, secret_note TEXT,
                       updated_at TIMESTAMP NULL, created_at TIMESTAMP NULL);
CREATE TABLE tags (article_id INTEGER, tag VARCHAR(50), PRIMARY KEY (article_id, tag));
CREATE TABLE nokey (name VARCHAR(20));
"""
ROWS = [
    (1, "Ferry timetable", "The ferry to the islands leaves the harbour at seven every morning.", "x"),
    (2, "Lighthouse maintenance", "The lamp of the lighthouse is cleaned every second Tuesday.", "y"),
    (3, "Fish market", "The fish market opens at dawn on the quay.", "z"),
]


class Database:
    """A fresh database of one engine: its source short name, config, credentials and an engine to edit it."""

    def __init__(self, short_name, config, credentials, engine, drop=None):
        self.short_name, self.config, self.credentials, self.engine, self.drop = (
            short_name, config, credentials, engine, drop)

    def run(self, sql: str, **params):
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), params)

    def seed(self):
        for statement in SCHEMA.strip().split(";"):
            if statement.strip():
                self.run(statement)
        for i, (pk, title, body, note) in enumerate(ROWS):
            self.run("INSERT INTO articles (id, title, body, secret_note, updated_at, created_at) "
                     "VALUES (:id, :t, :b, :n, :u, :c)", id=pk, t=title, b=body, n=note,
                     u=T0 + timedelta(minutes=i), c=T0)
        self.run("INSERT INTO tags VALUES (1, 'transport'), (1, 'islands'), (2, 'safety')")


def _sqlite(tmp_path):
    path = tmp_path / "harbour.sqlite"
    sqlite3.connect(path).close()
    return Database("sqlite", {"path": str(path)}, None, sa.create_engine(f"sqlite:///{path}"))


def _mariadb():
    name = f"airweave_src_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine("mysql+pymysql://root@127.0.0.1:3306/", poolclass=sa.pool.NullPool)
    try:
        with admin.begin() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
    except sa.exc.OperationalError as exc:
        pytest.skip(f"MariaDB is not reachable on 127.0.0.1:3306: {exc}")

    def drop():
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))

    return Database("mysql", {"host": "127.0.0.1", "port": 3306, "database": name},
                    {"username": "root", "password": ""},
                    sa.create_engine(f"mysql+pymysql://root@127.0.0.1:3306/{name}", poolclass=sa.pool.NullPool), drop)


def _postgres():
    db = settings.DATABASES["default"]
    name = f"airweave_src_{uuid.uuid4().hex[:8]}"
    host, user = db["HOST"], db["USER"]
    url = sa.URL.create("postgresql+psycopg", username=user, password=db.get("PASSWORD") or None,
                        host=None if host.startswith("/") else host, port=int(db["PORT"]) if db.get("PORT") else None,
                        database="postgres", query={"host": host} if host.startswith("/") else {})
    admin = sa.create_engine(url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))

    def drop():
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))

    config = {"host": host, "database": name, "sslmode": "disable"}
    if db.get("PORT"):
        config["port"] = int(db["PORT"])
    return Database("postgresql", config, {"username": user, "password": db.get("PASSWORD") or ""},
                    sa.create_engine(url.set(database=name), poolclass=sa.pool.NullPool), drop)


@pytest.fixture(params=["sqlite", "mysql", "postgresql"])
def database(request, tmp_path):
    db = {"sqlite": lambda: _sqlite(tmp_path), "mysql": _mariadb, "postgresql": _postgres}[request.param]()
    db.seed()
    yield db
    db.engine.dispose()
    if db.drop:
        db.drop()


def config_of(db, **extra):
    return {**db.config, "tables": ["articles", "tags"],
            "columns": ["articles.title", "articles.body"], "title_columns": ["articles.title"],
            "updated_at_column": "updated_at", "created_at_column": "created_at", **extra}


def test_lifecycle(database, make_collection, client):
    collection = make_collection(readable_id=f"sql-{database.short_name}")
    connection = connect(collection, database.short_name, config_of(database), database.credentials)
    first = sync(connection)
    assert first.entities_inserted == 3 + 3
    ferry = Entity.objects.get(source_connection=connection, entity_id="articles:1")
    assert ferry.name == "Ferry timetable" and ferry.entity_type == "SQLRowEntity"
    assert [b["entity_type"] for b in ferry.breadcrumbs] == ["SQLDatabase", "SQLTable"]
    assert ferry.raw_source_fields["primary_key"] == {"id": 1}
    assert ferry.raw_source_fields["row"]["title"] == "Ferry timetable"
    assert ferry.source_updated_at == T0.replace(tzinfo=timezone.utc)
    assert "secret_note" not in entity_text(connection, "articles:1")  # only the chosen columns
    assert "tags:1/islands" in entity_ids(connection)
    assert "articles:1" in search_ids(client, collection, "when does the ferry leave for the islands")
    cursor = connection.sync.cursor.data["tables"]
    assert set(cursor) == {"articles"}  # tags has no updated_at column: read whole each run

    # edit a row (its updated_at moves), add one, delete one
    database.run("UPDATE articles SET body = :b, updated_at = :u WHERE id = 2",
                 b="The lighthouse lamp now runs on solar panels installed in May.", u=T0 + timedelta(days=1))
    database.run("INSERT INTO articles (id, title, body, updated_at) VALUES (4, 'Harbour fees', "
                 "'Mooring costs ten euros a night.', :u)", u=T0 + timedelta(days=1))
    database.run("DELETE FROM articles WHERE id = 3")
    second = sync(connection)
    assert (second.entities_inserted, second.entities_updated, second.entities_deleted) == (1, 1, 1)
    # incremental: the unchanged article before the cursor is not read at all (3 tag rows are)
    assert second.entities_encountered == {"SQLRowEntity": 2 + 3}
    assert "solar panels" in entity_text(connection, "articles:2")
    assert search_ids(client, collection, "solar panels for the lighthouse lamp")[0] == "articles:2"
    assert "articles:3" not in entity_ids(connection)
    assert "articles:3" not in search_ids(client, collection, "fish market at dawn")

    database.run("DELETE FROM tags WHERE tag = 'islands'")
    third = sync(connection)
    assert counts(third)[3] == 1 and "tags:1/islands" not in entity_ids(connection)
    assert counts(sync(connection))[:2] == (0, 0)

    # a table dropped from the config: its rows go
    source_connection_update(source_connection=connection, config=config_of(database, tables=["articles"]),
                             for_api=False)
    connection.refresh_from_db()
    fourth = sync(connection)
    assert fourth.entities_deleted == 2 and not any(e.startswith("tags:") for e in entity_ids(connection))


def test_table_errors_fail_the_job_with_a_clear_message(database, make_collection):
    collection = make_collection(readable_id=f"sql-err-{database.short_name}")
    bad = connect(collection, database.short_name, {**database.config, "tables": ["nope"]}, database.credentials)
    job = sync(bad, expect="failed")
    assert job.error_category == "config_error" and "table 'nope' not found" in job.error
    nokey = connect(collection, database.short_name, {**database.config, "tables": ["nokey"]}, database.credentials)
    job = sync(nokey, expect="failed")
    assert "has no primary key" in job.error


def test_config_and_credentials_are_checked(tmp_path, make_collection):
    with pytest.raises(ValueError, match="'columns': 'body' must be"):
        SQLiteSource.validate_config({"path": "x", "tables": ["articles"], "columns": ["body"]})
    with pytest.raises(ValueError, match="names a table not in 'tables'"):
        MySQLSource.validate_config({"host": "h", "database": "d", "tables": ["a"], "title_columns": ["b.c"]})
    (tmp_path / "plain.txt").write_text("not a database")
    with pytest.raises(ValueError, match="not an SQLite database"):
        SQLiteSource.validate_config({"path": str(tmp_path / "plain.txt"), "tables": ["a"]})
    with pytest.raises(ValueError, match="sslmode"):
        PostgreSQLSource.validate_config({"host": "h", "database": "d", "tables": ["a"], "sslmode": "maybe"})
    with pytest.raises(SourceConnectionError, match="credential field 'username' is required"):
        source_connection_create(collection=make_collection(readable_id="sql-creds"), short_name="postgresql",
                                 config={"host": "h", "database": "d", "tables": ["a"]}, credentials={"password": "x"},
                                 sync_immediately=False)


def test_wrong_password_is_an_auth_error():
    source = MySQLSource(MySQLSource.validate_config({"host": "127.0.0.1", "database": "test", "tables": ["a"]}),
                         {"username": "root", "password": "definitely-wrong"})
    try:
        list(source.generate_entities({}))
    except SourceError as exc:
        if exc.category == "connection_error" and "Can't connect" in str(exc):
            pytest.skip("MariaDB is not reachable on 127.0.0.1:3306")
        assert exc.category == "auth_error", str(exc)
    else:
        pytest.skip("this MariaDB accepts any password for root")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "10.1.2.3", "169.254.169.254", "/var/run/postgresql"])
def test_private_servers_and_local_sockets_are_refused_by_default(settings, host, make_collection):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(ValueError, match="AIRWEAVE_ALLOW_PRIVATE_HOSTS"):
        PostgreSQLSource.validate_config({"host": host, "database": "d", "tables": ["a"]})
    source = MySQLSource({"host": host, "database": "d", "tables": ["a"], "port": 3306}, {"username": "u"})
    with pytest.raises(SourceError, match="refused to connect"):
        source.engine()
