"""Each page renders in a fixed number of queries, whatever the number of connections, jobs or entities:
the count measured with one connection (or job) is asserted again with many more."""
from __future__ import annotations

import pytest
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from airweave.collections.models import SyncJob
from connectors.services import source_connection_create


def _count(client, url) -> int:
    with CaptureQueriesContext(db_connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries)


def _add_connections(collection, folder, n: int, jobs_each: int = 2):
    made = []
    for i in range(n):
        connection = source_connection_create(collection=collection, short_name="local_files",
                                              name=f"Folder {i}", config={"path": str(folder)},
                                              sync_immediately=False, for_api=False)
        for j in range(jobs_each):
            SyncJob.objects.create(organization_id=collection.organization_id, sync=connection.sync,
                                   source_connection=connection, status="completed", entities_inserted=j,
                                   started_at=timezone.now(), completed_at=timezone.now(),
                                   error_details={"skipped": {"encrypted": {"count": 2, "examples": []}}},
                                   stage_seconds={"listing": 0.1, "embedding": 0.5})
        made.append(connection)
    return made


PAGES = ["/ui/", "/ui/collections/", "/ui/collections/handbook/", "/ui/collections/handbook/sources/",
         "/ui/collections/handbook/sources/local_files/", "/ui/collections/handbook/search",
         "/ui/collections/handbook/entities/"]


@pytest.mark.parametrize("url", PAGES)
def test_pages_render_in_a_fixed_number_of_queries(url, team, docs, browser, django_assert_num_queries,
                                                   django_assert_max_num_queries, make_collection):
    collection, connection, job, root = docs
    member = browser(team[3])
    baseline = _count(member, url)
    _add_connections(collection, root, 12)
    for i in range(5):
        make_collection(readable_id=f"more-{i}", name=f"More {i} docs", organization=team[0])
    with django_assert_num_queries(baseline):
        member.get(url)
    with django_assert_max_num_queries(16):
        member.get(url)


def test_connection_panel_and_jobs_page_are_fixed(team, docs, browser, django_assert_num_queries):
    collection, connection, job, root = docs
    member = browser(team[3])
    panel = f"/ui/collections/handbook/connections/{connection.id}/panel"
    jobs = f"/ui/collections/handbook/connections/{connection.id}/jobs/"
    baseline_panel, baseline_jobs = _count(member, panel), _count(member, jobs)
    for j in range(30):
        SyncJob.objects.create(organization_id=collection.organization_id, sync=connection.sync,
                               source_connection=connection, status="failed", error="x", error_category="y")
    with django_assert_num_queries(baseline_panel):
        member.get(panel)
    with django_assert_num_queries(baseline_jobs):
        member.get(jobs)


def test_entity_page_is_fixed(team, docs, browser, django_assert_max_num_queries):
    collection = docs[0]
    entity = collection.entities.order_by("name").first()
    member = browser(team[3])
    with django_assert_max_num_queries(12):
        assert member.get(f"/ui/collections/handbook/entities/{entity.pk}/").status_code == 200
