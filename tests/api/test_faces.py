"""Faces stay thin: the REST API, the web pages and the MCP server read through selectors.

Two checks. The source of every module under airweave/api, airweave/web and airweave/mcp holds
no model manager (`.objects`), no queryset call and no raw SQL, and serializers import no
selector, service or credential store (they shape data they are given). And the list and
detail endpoints run a fixed number of queries, however many rows they render (no N+1).
"""
from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext

from connectors.services import source_connection_create
from airweave.collections.models import SyncJob
from connectors.sync.jobs import sync_job_create, sync_job_transition

ROOT = Path(settings.BASE_DIR)
FACES = ["airweave/api", "airweave/web", "airweave/mcp"]
# Queryset methods that run or build a query; names shared with dicts and lists (get, update,
# values, count with an argument) are left out.
QUERYSET_CALLS = {
    "filter", "exclude", "annotate", "aggregate", "select_related", "prefetch_related", "values_list", "order_by",
    "raw", "extra", "get_or_create", "update_or_create", "bulk_create", "bulk_update", "all", "exists", "first",
    "last", "iterator", "in_bulk", "distinct", "only", "defer", "select_for_update", "refresh_from_db",
}
QUERYSET_CALLS_WITHOUT_ARGUMENTS = {"count", "delete", "save"}
MANAGERS = {"objects", "_default_manager", "_base_manager"}
SERIALIZERS_MAY_NOT_IMPORT = (".selectors", ".services", "connectors.authorization", "django.db")


def _face_modules():
    return sorted(p for folder in FACES for p in (ROOT / folder).rglob("*.py"))


def _queries_in(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in MANAGERS:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in QUERYSET_CALLS or (name in QUERYSET_CALLS_WITHOUT_ARGUMENTS and not node.args):
                found.append(f"line {node.lineno}: .{name}()")
            elif name in ("cursor", "execute") and "connection" in ast.unparse(node.func.value):
                found.append(f"line {node.lineno}: raw SQL")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [getattr(node, "module", None) or ""] + [a.name for a in node.names]
            if any(m == "django.db" or m.startswith("django.db.") for m in modules):
                found.append(f"line {node.lineno}: imports django.db")
    return found


@pytest.mark.parametrize("path", _face_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_faces_run_no_query_themselves(path):
    found = _queries_in(ast.parse(path.read_text()))
    assert found == [], f"{path.relative_to(ROOT)} queries the database itself ({'; '.join(found)}): use a selector"


def test_the_check_sees_queries():
    source = ("Entity.objects.filter(x=1)\ncollection.source_connections.all()\nqs.count()\n"
              "from django.db import connection\nconnection.cursor()\n")
    assert len(_queries_in(ast.parse(source))) == 6  # .objects and .filter() are two findings on one line
    assert _queries_in(ast.parse("d.values()\nd.get('a')\nitems.count(3)\nd.update(a=1)\n")) == []


@pytest.mark.parametrize("path", [p for p in _face_modules() if p.stem.startswith("serializer")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_serializers_only_shape_data(path):
    tree = ast.parse(path.read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    bad = [m for m in imported if any(m.endswith(b) or m.startswith(b) or f"{b}." in m
                                      for b in SERIALIZERS_MAY_NOT_IMPORT)]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}: reads belong to selectors, decisions to services"


# --- a fixed number of queries, whatever the number of rows ------------------------------------------

_numbers = itertools.count()


def _populate(make_collection, tmp_path, collections: int, connections_each: int, jobs_each: int):
    """Collections with local_files connections and completed jobs; answers the connections."""
    made = []
    for _ in range(collections):
        n = next(_numbers)
        collection = make_collection(readable_id=f"faces-{n}", name=f"Faces {n}")
        for j in range(connections_each):
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(tmp_path)}, sync_immediately=False,
                                                  for_api=False, name=f"folder {j}")
            for _ in range(jobs_each):  # finished jobs: one may run at a time
                job = sync_job_create(sync=connection.sync)
                sync_job_transition(job, SyncJob.Status.RUNNING)
                sync_job_transition(job, SyncJob.Status.COMPLETED)
            made.append(connection)
    return made


def _warm(client) -> None:
    """A request first: the key's last_used_date is written at most once a minute, not part of the count."""
    client.get("/collections/count")


def _count(client, url: str) -> int:
    _warm(client)
    with CaptureQueriesContext(db_connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(queries)


@pytest.mark.parametrize("url", ["/collections", "/source-connections"])
def test_list_endpoints_run_a_fixed_number_of_queries(client, make_collection, tmp_path, url,
                                                      django_assert_max_num_queries):
    _populate(make_collection, tmp_path, collections=1, connections_each=1, jobs_each=1)
    few = _count(client, url)
    _populate(make_collection, tmp_path, collections=4, connections_each=3, jobs_each=2)
    _warm(client)
    with django_assert_max_num_queries(few):
        response = client.get(url)
    assert len(response.json()) >= 4


def test_detail_and_job_endpoints_run_a_fixed_number_of_queries(client, make_collection, tmp_path,
                                                                django_assert_max_num_queries):
    (small,) = _populate(make_collection, tmp_path, collections=1, connections_each=1, jobs_each=1)
    (large,) = _populate(make_collection, tmp_path, collections=1, connections_each=1, jobs_each=12)
    for path in ("", "/jobs"):
        few = _count(client, f"/source-connections/{small.id}{path}")
        _warm(client)
        with django_assert_max_num_queries(few):
            response = client.get(f"/source-connections/{large.id}{path}")
        assert response.status_code == 200
    detail = client.get(f"/source-connections/{large.id}").json()
    assert detail["sync"]["total_runs"] == 12 and detail["sync"]["last_job"] is not None
    assert len(client.get(f"/source-connections/{large.id}/jobs").json()) == 12
    collection = client.get(f"/collections/{large.collection.readable_id}").json()
    assert collection["source_connection_summaries"] == [{"short_name": "local_files", "name": "folder 0"}]
    assert collection["status"] == "ACTIVE"
