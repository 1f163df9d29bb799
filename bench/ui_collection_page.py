"""Server-side render time of the web UI's collection page with many source connections.

Builds an organization with one collection of `--connections` local_files connections (each with
`--jobs` finished jobs and `--entities` entities of two types; rows written directly, nothing
synced), logs a member in with Django's test client and renders `/ui/collections/<id>/`
`--runs` times in-process (middleware, session, selectors, template: everything but the
network). Prints wall-time p50/p95/max, CPU-time p50/p95 and the query count, saves JSON under bench/results/, and
deletes what it built unless --keep. The issue's bar: under 150 ms with 50 connections.

    .venv/bin/python bench/ui_collection_page.py --connections 50
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")
os.environ.setdefault("DEBUG", "false")  # as served in production (DEBUG=true: set it to measure a laptop's dev server)


def build(organization, user, connections: int, jobs: int, entities: int):
    """The collection `ui-bench` with its connections, jobs and entities (bulk inserts)."""
    from django.utils import timezone

    from airweave.collections.models import Entity, SourceConnection, Sync, SyncJob
    from airweave.collections.services import collection_create

    collection = collection_create(organization=organization, name="UI bench", readable_id="ui-bench",
                                   created_by=user)
    now = timezone.now()
    for i in range(connections):
        sc = SourceConnection.objects.create(organization=organization, collection=collection, name=f"Folder {i}",
                                             short_name="local_files", config={"path": f"/srv/folder-{i}"},
                                             status="active")
        sync = Sync.objects.create(organization=organization, source_connection=sc,
                                   cron_schedule="0 */6 * * *" if i % 2 else "")
        SyncJob.objects.bulk_create([
            SyncJob(organization=organization, sync=sync, source_connection=sc, status="completed",
                    started_at=now, completed_at=now, entities_inserted=j, entities_kept=entities,
                    stage_seconds={"listing": 0.2, "converting": 0.1, "chunking": 0.05, "embedding": 1.0,
                                   "writing": 0.1})
            for j in range(jobs)])
        Entity.objects.bulk_create([
            Entity(organization=organization, collection=collection, source_connection=sc, entity_id=f"{i}/{k}.md",
                   entity_type="LocalFileEntity" if k % 3 else "LocalFolderEntity", name=f"Doc {k}",
                   content_hash="x")
            for k in range(entities)])
    return collection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=5, help="finished jobs per connection")
    parser.add_argument("--entities", type=int, default=20, help="entities per connection")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="keep the organization afterwards")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections, connection
    from django.test import Client

    from airweave.tenancy.models import Organization, User
    from airweave.tenancy.services import organization_create

    Organization.objects.filter(name="ui-bench").delete()
    User.objects.filter(email="ui-bench@example.com").delete()
    user = User.objects.create_user("ui-bench@example.com", "ui-bench-password")
    organization = organization_create(name="ui-bench", owner=user)
    try:
        started = time.perf_counter()
        collection = build(organization, user, args.connections, args.jobs, args.entities)
        built_s = time.perf_counter() - started
        # As in a long-lived server process: the connection stays open between requests.
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        client = Client()
        client.force_login(user)
        url = f"/ui/collections/{collection.readable_id}/"
        for _ in range(3):  # warm up: templates compiled, connections open
            assert client.get(url).status_code == 200
        queries = []
        with connection.execute_wrapper(lambda execute, sql, *a: (queries.append(sql), execute(sql, *a))[1]):
            response = client.get(url)
        assert response.status_code == 200 and response.content.count(b'class="connection-panel"') == args.connections
        times, cpu = [], []
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            client.get(url)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        times.sort()
        cpu.sort()
        result = {
            "page": "/ui/collections/<readable_id>/", "connections": args.connections, "jobs_per_connection": args.jobs,
            "entities_per_connection": args.entities, "runs": args.runs, "queries": len(queries),
            "p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
            "max_ms": round(times[-1], 1),
            # CPU time of this process per render (the database's own time is in its server process):
            # steadier than wall time when other work shares the machine.
            "cpu_p50_ms": round(statistics.median(cpu), 1), "cpu_p95_ms": round(cpu[int(0.95 * (len(cpu) - 1))], 1),
            "load_average": [round(x, 2) for x in os.getloadavg()], "html_bytes": len(response.content), "build_s": round(built_s, 1),
            "debug": os.environ["DEBUG"],
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "at": datetime.now().isoformat(timespec="seconds"),
        }
    finally:
        if not args.keep:
            Organization.objects.filter(pk=organization.pk).delete()
            User.objects.filter(pk=user.pk).delete()
    print(json.dumps(result, indent=2))
    (BENCH_DIR / "results").mkdir(exist_ok=True)
    out = BENCH_DIR / "results" / f"ui-collection-page-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(result, indent=2))
    (BENCH_DIR / "results" / "ui-collection-page-latest.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
