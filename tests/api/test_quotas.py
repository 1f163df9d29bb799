"""Quotas per organization: source connections (403), searches per month (429 + Retry-After), entities
(skipped with a reason, never a failed sync). Settings give the default; an organization's own quota wins."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from airweave.tenancy.models import Organization, UsageCounter
from airweave.tenancy.quotas import SEARCHES_PER_MONTH, QuotaExceeded, search_quota_consume, search_usage


@pytest.fixture
def folder(write_files, settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    return write_files({"a.md": "# A\nAlpha.", "b.md": "# B\nBravo.", "c.md": "# C\nCharlie."})


def _create(api, folder, collection="docs"):
    return api.post("/source-connections", {"short_name": "local_files", "readable_collection_id": collection,
                                            "config": {"path": str(folder)}, "sync_immediately": False}, format="json")


def test_source_connection_quota_is_403_with_a_clear_message(client, other_client, make_collection, other_org, folder,
                                                             settings):
    settings.AIRWEAVE_QUOTA_SOURCE_CONNECTIONS = 1
    make_collection(readable_id="docs")
    make_collection(readable_id="docs", organization=other_org)
    assert _create(client, folder).status_code == 201
    refused = _create(client, folder)
    assert refused.status_code == 403
    detail = refused.json()["detail"]
    assert "Quota exceeded" in detail and "at most 1 source connections" in detail
    assert "AIRWEAVE_QUOTA_SOURCE_CONNECTIONS" in detail
    assert _create(other_client, folder).status_code == 201  # per organization


def test_an_organizations_own_quota_overrides_the_setting(client, org, make_collection, folder, settings):
    settings.AIRWEAVE_QUOTA_SOURCE_CONNECTIONS = 1
    Organization.objects.filter(pk=org.pk).update(quota_source_connections=2)
    make_collection(readable_id="docs")
    assert [_create(client, folder).status_code for _ in range(3)] == [201, 201, 403]


def test_search_quota_counts_valid_searches_and_answers_429(client, other_client, org, make_collection, other_org,
                                                            settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 3
    make_collection(readable_id="docs")
    make_collection(readable_id="docs", organization=other_org)
    assert client.post("/collections/docs/search/instant", {"query": ""}, format="json").status_code == 422  # not counted
    assert client.post("/collections/docs/search/instant", {"query": "one"}, format="json").status_code == 200
    assert client.post("/collections/docs/search", {"query": "two"}, format="json").status_code == 200
    assert client.post("/collections/docs/search/classic", {"query": "three"}, format="json").status_code == 200
    for path in ("/collections/docs/search/instant", "/collections/docs/search", "/collections/docs/search/stream"):
        refused = client.post(path, {"query": "four"}, format="json")
        assert refused.status_code == 429, path
        assert "Quota exceeded" in refused.json()["detail"] and "searches this month" in refused.json()["detail"]
        assert int(refused["Retry-After"]) > 0
    assert search_usage(org).used == 3
    assert other_client.post("/collections/docs/search/instant", {"query": "x"}, format="json").status_code == 200


def test_search_quota_resets_each_month(org, settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 1
    january = datetime(2031, 1, 31, 23, 59, 30, tzinfo=timezone.utc)
    search_quota_consume(org, now=january)
    with pytest.raises(QuotaExceeded) as refused:
        search_quota_consume(org, now=january)
    assert refused.value.retry_after == 30  # seconds to February
    search_quota_consume(org, now=datetime(2031, 2, 1, tzinfo=timezone.utc))
    assert list(UsageCounter.objects.filter(organization=org).order_by("period").values_list("period__month", "count")) \
        == [(1, 1), (2, 1)]


def test_an_organizations_zero_quota_allows_no_search(org, settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 100
    Organization.objects.filter(pk=org.pk).update(quota_searches_per_month=0)
    with pytest.raises(QuotaExceeded):
        search_quota_consume(org.pk)


def test_without_a_search_quota_nothing_is_written(client, make_collection, settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 0
    make_collection(readable_id="docs")
    for _ in range(3):
        assert client.post("/collections/docs/search/instant", {"query": "x"}, format="json").status_code == 200
    assert not UsageCounter.objects.exists()


def test_entity_quota_skips_new_entities_with_a_reason(org, make_collection, sync_folder, folder, settings):
    settings.AIRWEAVE_QUOTA_ENTITIES = 2
    connection, job = sync_folder(make_collection(readable_id="docs"), folder)
    assert job.status == "completed"
    assert (job.entities_inserted, job.entities_skipped) == (2, 1)
    (example,) = job.error_details["skipped"]["quota"]["examples"]
    assert "entity limit" in example["reason"]
    # Changes to existing entities still sync at the limit; raising the quota lets the rest in.
    (folder / "a.md").write_text("# A\nAlpha, changed.")
    _, job = sync_folder(connection.collection, folder, connection=connection)
    assert (job.entities_updated, job.entities_inserted, job.entities_skipped) == (1, 0, 1)
    Organization.objects.filter(pk=org.pk).update(quota_entities=10)
    _, job = sync_folder(connection.collection, folder, connection=connection)
    assert (job.entities_inserted, job.entities_kept, job.entities_skipped) == (1, 2, 0)


def test_quota_usage_reports(org, settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 10
    search_quota_consume(org)
    usage = search_usage(org)
    assert (usage.quota, usage.used, usage.limit, usage.remaining) == (SEARCHES_PER_MONTH, 1, 10, 9)
