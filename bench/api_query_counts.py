"""SQL queries per REST answer, with few rows and with many: the faces read in a fixed number of queries.

Builds an organization ("bench-faces") twice over — first 1 collection with 1 local_files
connection and 1 finished job, then `--collections` collections of `--connections` connections
with `--jobs` finished jobs each (rows written through the services, nothing synced) — and
counts the queries of the list and detail endpoints in-process with Django's test client and
an API key (authentication, rate limiting and the answer's rendering included). Prints one line
per endpoint, saves JSON under bench/results/ and deletes what it built.

    .venv/bin/python bench/api_query_counts.py --collections 20 --connections 5 --jobs 10
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")
os.environ.setdefault("DEBUG", "false")
ORG = "bench-faces"


def build(organization, tag: str, collections: int, connections: int, jobs: int):
    """Collections `<tag>-<i>`, each with local_files connections and finished jobs; answers the connections."""
    from airweave.collections.models import SyncJob
    from airweave.collections.services import collection_create
    from connectors.services import source_connection_create
    from connectors.sync.jobs import sync_job_create, sync_job_transition

    made = []
    for i in range(collections):
        collection = collection_create(organization=organization, name=f"Bench {tag} {i}", readable_id=f"{tag}-{i}")
        for j in range(connections):
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(BENCH_DIR)}, sync_immediately=False,
                                                  for_api=False, name=f"folder {j}")
            for _ in range(jobs):
                job = sync_job_create(sync=connection.sync)
                sync_job_transition(job, SyncJob.Status.RUNNING)
                sync_job_transition(job, SyncJob.Status.COMPLETED)
            made.append(connection)
    return made


def count(client, key: str, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get("/collections/count", HTTP_X_API_KEY=key)  # the key's last_used_date is written once a minute
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, HTTP_X_API_KEY=key)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
    return len(queries)


def measure(client, key: str, connection) -> dict:
    return {
        "GET /collections": count(client, key, "/collections?limit=1000"),
        "GET /collections/{id}": count(client, key, f"/collections/{connection.collection.readable_id}"),
        "GET /source-connections": count(client, key, "/source-connections?limit=1000"),
        "GET /source-connections/{id}": count(client, key, f"/source-connections/{connection.id}"),
        "GET /source-connections/{id}/jobs": count(client, key, f"/source-connections/{connection.id}/jobs"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collections", type=int, default=20)
    parser.add_argument("--connections", type=int, default=5, help="per collection")
    parser.add_argument("--jobs", type=int, default=10, help="finished jobs per connection")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from airweave.tenancy.models import Organization
    from airweave.tenancy.services import api_key_create, organization_get_or_create

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)
    Organization.objects.filter(name=ORG).delete()
    organization = organization_get_or_create(name=ORG)
    try:
        key = api_key_create(organization=organization, name="bench").key
        client = Client()
        (small,) = build(organization, "few", 1, 1, 1)
        few = measure(client, key, small)
        many_connections = build(organization, "many", args.collections, args.connections, args.jobs)
        rows = {"collections": args.collections + 1, "source_connections": len(many_connections) + 1,
                "jobs_of_the_connection": args.jobs}
        many = measure(client, key, many_connections[-1])
    finally:
        Organization.objects.filter(name=ORG).delete()

    print(f"queries per answer: 1 row vs {rows['collections']} collections, {rows['source_connections']} "
          f"connections, {rows['jobs_of_the_connection']} jobs of the connection")
    for endpoint in few:
        print(f"  {endpoint:36} {few[endpoint]:3d} -> {many[endpoint]:3d}")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    result = {"benchmark": "api_query_counts", "at": stamp, "rows": rows, "few": few, "many": many,
              "python": platform.python_version(), "machine": platform.machine()}
    out = BENCH_DIR / "results"
    out.mkdir(exist_ok=True)
    for name in (f"api-query-counts-{stamp}.json", "api-query-counts-latest.json"):
        (out / name).write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved bench/results/api-query-counts-{stamp}.json")


if __name__ == "__main__":
    main()
