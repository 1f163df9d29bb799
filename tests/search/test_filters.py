"""v2 filter groups (search/filters.py): every operator on the fields it applies to, AND within a
group, OR across groups, and invalid filters answered with the condition's location and an example.

The corpus is synced once for the module; each search lists every chunk that passes the filter
(semantic strategy, limit 1000), so the assertions are about the filter alone.
"""
from __future__ import annotations

import os
import uuid
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from airweave.collections.models import Chunk
from airweave.collections.services import collection_create
from airweave.providers.embeddings import get_embedder
from airweave.tenancy.models import Organization
from airweave.tenancy.services import api_key_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from search.filters import EXAMPLE, FilterError, compile_filter_groups
from search.instant import InstantSearchRequest, hydrate, search_instant
from search.retrieval import RetrievalQuery, retrieve

pytestmark = pytest.mark.django_db


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


LONG = " ".join(f"Paragraph {i} of the operations handbook explains the on-call rota and paging rules." for i in range(30))
# relative path -> (content, mtime)
FILES = {
    "readme.md": ("# Read me\nStart here: an overview of the documents.", utc(2022, 12, 1)),
    "reports/2023/q1.md": ("---\ntitle: Q1 report\n---\nRevenue grew in the first quarter.", utc(2023, 3, 31)),
    "reports/2024/q2.md": ("---\ntitle: Q2 Report\n---\nRevenue was flat in the second quarter.", utc(2024, 6, 30)),
    "notes/meeting.txt": ("Meeting notes: we agreed on the hiring plan.", utc(2024, 1, 15, 12)),
    "notes/handbook.md": ("# Operations handbook\n" + LONG, utc(2024, 9, 1)),
}
ALL = set(FILES)
NEEDS_NO_BIRTHTIME = pytest.mark.skipif(hasattr(os.stat_result, "st_birthtime"),
                                        reason="files carry a birth time here; os.utime cannot set it")


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker, tmp_path_factory):
    root = tmp_path_factory.mktemp("filters") / "docs"
    for rel, (text, mtime) in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    with django_db_blocker.unblock(), override_settings(AIRWEAVE_CHUNK_TOKENS=48, AIRWEAVE_CHUNK_OVERLAP_TOKENS=4):
        org = Organization.objects.create(name=f"filters-{uuid.uuid4().hex[:8]}")
        try:
            collection = collection_create(organization=org, name="Filter corpus", readable_id="corpus")
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(root)}, sync_immediately=False, for_api=False)
            job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
            assert job.status == "completed" and job.entities_inserted == len(FILES), job.error
            chunk_counts = {rel: Chunk.objects.filter(collection=collection, original_entity_id=rel).count()
                            for rel in FILES}
            assert chunk_counts["notes/handbook.md"] >= 3 and all(
                n == 1 for rel, n in chunk_counts.items() if rel != "notes/handbook.md"), chunk_counts
            key = api_key_create(organization=org, name="filters").key
            query_vector = get_embedder(collection.embedding_model_name).embed(["documents"])[0]
        except BaseException:
            org.delete()
            raise
    yield SimpleNamespace(collection=collection, connection=connection, job=job, key=key, chunk_counts=chunk_counts,
                          query_vector=query_vector)
    with django_db_blocker.unblock():
        org.delete()


def run(corpus, filter_groups, query="documents", strategy="semantic"):
    if strategy == "semantic" and query == "documents":
        # The same real retrieval and filter SQL as search_instant, with the query embedded once
        # for the module (embedding is the slow part of a search on a small corpus).
        hits = retrieve(RetrievalQuery(
            collection_id=corpus.collection.id, dims=corpus.collection.vector_size, text=query,
            query_vector=corpus.query_vector, strategy="semantic", condition=compile_filter_groups(filter_groups),
            limit=1000))
        return hydrate(hits)
    return search_instant(collection=corpus.collection, principals=None, request=InstantSearchRequest(
        query=query, retrieval_strategy=strategy, filter=filter_groups, limit=1000)).results


def cond(field, operator, value):
    return {"field": field, "operator": operator, "value": value}


def matching(corpus, *conditions, strategy="semantic", query="documents"):
    """Original entity ids of the chunks passing one group of `conditions`."""
    return {r["airweave_system_metadata"]["original_entity_id"]
            for r in run(corpus, [{"conditions": list(conditions)}], query=query, strategy=strategy)}


def test_no_filter_returns_everything(corpus):
    via_service = search_instant(collection=corpus.collection, principals=None, request=InstantSearchRequest(
        query="documents", retrieval_strategy="semantic", limit=1000)).results
    assert {r["airweave_system_metadata"]["original_entity_id"] for r in via_service} == ALL
    assert {r["airweave_system_metadata"]["original_entity_id"] for r in run(corpus, None)} == ALL
    assert {r["airweave_system_metadata"]["original_entity_id"] for r in run(corpus, [])} == ALL


@pytest.mark.parametrize("condition, expected", [
    # name
    (cond("name", "equals", "Q1 report"), {"reports/2023/q1.md"}),
    (cond("name", "equals", "q1 report"), set()),  # equals is exact
    (cond("name", "not_equals", "Q1 report"), ALL - {"reports/2023/q1.md"}),
    (cond("name", "contains", "REPORT"), {"reports/2023/q1.md", "reports/2024/q2.md"}),  # case-insensitive
    (cond("name", "contains", ".txt"), {"notes/meeting.txt"}),
    (cond("name", "contains", "%"), set()),  # LIKE wildcards are literal
    (cond("name", "contains", "_"), set()),
    (cond("name", "in", ["Q1 report", "meeting.txt"]), {"reports/2023/q1.md", "notes/meeting.txt"}),
    (cond("name", "not_in", ["Q1 report", "meeting.txt"]), ALL - {"reports/2023/q1.md", "notes/meeting.txt"}),
    # breadcrumbs.name
    (cond("breadcrumbs.name", "equals", "notes"), {"notes/meeting.txt", "notes/handbook.md"}),
    (cond("breadcrumbs.name", "equals", "2024"), {"reports/2024/q2.md"}),
    (cond("breadcrumbs.name", "not_equals", "reports"), {"readme.md", "notes/meeting.txt", "notes/handbook.md"}),
    (cond("breadcrumbs.name", "contains", "NOTE"), {"notes/meeting.txt", "notes/handbook.md"}),
    (cond("breadcrumbs.name", "contains", "02"), {"reports/2023/q1.md", "reports/2024/q2.md"}),
    (cond("breadcrumbs.name", "in", ["2023", "notes"]), {"reports/2023/q1.md", "notes/meeting.txt", "notes/handbook.md"}),
    (cond("breadcrumbs.name", "not_in", ["2023", "notes"]), {"readme.md", "reports/2024/q2.md"}),
    (cond("breadcrumbs.entity_id", "equals", "reports/2024"), {"reports/2024/q2.md"}),
    (cond("breadcrumbs.entity_type", "equals", "LocalFolderEntity"), ALL - {"readme.md"}),
    # system metadata
    (cond("airweave_system_metadata.entity_type", "equals", "LocalFileEntity"), ALL),
    (cond("airweave_system_metadata.entity_type", "not_equals", "LocalFileEntity"), set()),
    (cond("airweave_system_metadata.entity_type", "contains", "localfile"), ALL),
    (cond("airweave_system_metadata.source_name", "equals", "local_files"), ALL),
    (cond("airweave_system_metadata.source_name", "in", ["github", "notion"]), set()),
    (cond("airweave_system_metadata.source_name", "not_in", ["github", "notion"]), ALL),
    (cond("airweave_system_metadata.original_entity_id", "equals", "readme.md"), {"readme.md"}),
    (cond("airweave_system_metadata.original_entity_id", "contains", "REPORTS/"), {"reports/2023/q1.md", "reports/2024/q2.md"}),
    (cond("airweave_system_metadata.original_entity_id", "in", ["readme.md", "notes/meeting.txt", "nope"]),
     {"readme.md", "notes/meeting.txt"}),
    (cond("airweave_system_metadata.original_entity_id", "not_in", ["readme.md"]), ALL - {"readme.md"}),
    (cond("airweave_system_metadata.original_entity_id", "not_equals", "readme.md"), ALL - {"readme.md"}),
    # chunk_index
    (cond("airweave_system_metadata.chunk_index", "equals", 0), ALL),
    (cond("airweave_system_metadata.chunk_index", "greater_than", 0), {"notes/handbook.md"}),
    (cond("airweave_system_metadata.chunk_index", "greater_than_or_equal", 1), {"notes/handbook.md"}),
    (cond("airweave_system_metadata.chunk_index", "less_than", 1), ALL),
    (cond("airweave_system_metadata.chunk_index", "less_than_or_equal", 0), ALL),
    (cond("airweave_system_metadata.chunk_index", "in", [1, 2]), {"notes/handbook.md"}),
    # dates (file mtimes set with os.utime)
    (cond("updated_at", "greater_than", "2024-01-01"), {"reports/2024/q2.md", "notes/meeting.txt", "notes/handbook.md"}),
    (cond("updated_at", "less_than", "2023-01-01T00:00:00Z"), {"readme.md"}),
    (cond("updated_at", "greater_than_or_equal", "2024-06-30"), {"reports/2024/q2.md", "notes/handbook.md"}),  # inclusive
    (cond("updated_at", "greater_than", "2024-06-30T00:00:00+00:00"), {"notes/handbook.md"}),
    (cond("updated_at", "less_than_or_equal", "2023-03-31T00:00:00Z"), {"readme.md", "reports/2023/q1.md"}),
    (cond("updated_at", "less_than", "2023-03-31T00:00:00Z"), {"readme.md"}),
    (cond("updated_at", "equals", "2024-01-15T12:00:00Z"), {"notes/meeting.txt"}),
    (cond("updated_at", "greater_than", "2024-01-15T13:30:00+02:00"),  # 11:30Z: the offset counts
     {"reports/2024/q2.md", "notes/meeting.txt", "notes/handbook.md"}),
    (cond("updated_at", "less_than", "2024-01-15T13:30:00+02:00"), {"readme.md", "reports/2023/q1.md"}),
    # created_at is min(ctime, mtime) where the platform has no birth time (Linux), so the mtime here.
    pytest.param(cond("created_at", "less_than", "2023-06-01"), {"readme.md", "reports/2023/q1.md"},
                 marks=NEEDS_NO_BIRTHTIME),
    pytest.param(cond("created_at", "greater_than_or_equal", "2024-09-01T00:00:00Z"), {"notes/handbook.md"},
                 marks=NEEDS_NO_BIRTHTIME),
])
def test_operator(corpus, condition, expected):
    assert matching(corpus, condition) == expected


def test_chunk_level_fields_select_chunks_not_entities(corpus):
    n = corpus.chunk_counts["notes/handbook.md"]
    later = run(corpus, [{"conditions": [cond("airweave_system_metadata.chunk_index", "greater_than", 0)]}])
    assert sorted(r["airweave_system_metadata"]["chunk_index"] for r in later) == list(range(1, n))
    one = run(corpus, [{"conditions": [cond("entity_id", "equals", "notes/handbook.md__chunk_1")]}])
    assert [r["entity_id"] for r in one] == ["notes/handbook.md__chunk_1"]
    some = run(corpus, [{"conditions": [cond("entity_id", "in", ["readme.md__chunk_0", "notes/handbook.md__chunk_2"])]}])
    assert {r["entity_id"] for r in some} == {"readme.md__chunk_0", "notes/handbook.md__chunk_2"}


def test_sync_and_job_ids(corpus):
    sync_id, job_id = str(corpus.connection.sync.id), str(corpus.job.id)
    assert matching(corpus, cond("airweave_system_metadata.sync_id", "equals", sync_id)) == ALL
    assert matching(corpus, cond("airweave_system_metadata.sync_job_id", "equals", job_id)) == ALL
    assert matching(corpus, cond("airweave_system_metadata.sync_job_id", "not_equals", job_id)) == set()
    assert matching(corpus, cond("airweave_system_metadata.sync_id", "equals", str(uuid.uuid4()))) == set()


def test_and_within_a_group(corpus):
    assert matching(corpus, cond("breadcrumbs.name", "equals", "notes"), cond("name", "contains", "meeting")) == {
        "notes/meeting.txt"}
    assert matching(corpus, cond("name", "contains", "report"), cond("updated_at", "greater_than", "2024-01-01")) == {
        "reports/2024/q2.md"}
    assert matching(corpus, cond("name", "contains", "report"), cond("breadcrumbs.name", "equals", "notes")) == set()


def test_or_across_groups(corpus):
    groups = [{"conditions": [cond("name", "equals", "Q1 report")]},
              {"conditions": [cond("airweave_system_metadata.original_entity_id", "equals", "readme.md")]}]
    got = {r["airweave_system_metadata"]["original_entity_id"] for r in run(corpus, groups)}
    assert got == {"reports/2023/q1.md", "readme.md"}
    groups = [{"conditions": [cond("breadcrumbs.name", "equals", "reports"), cond("name", "contains", "Q2")]},
              {"conditions": [cond("breadcrumbs.name", "equals", "notes"), cond("name", "contains", "meeting")]}]
    got = {r["airweave_system_metadata"]["original_entity_id"] for r in run(corpus, groups)}
    assert got == {"reports/2024/q2.md", "notes/meeting.txt"}


@pytest.mark.parametrize("strategy", ["keyword", "hybrid"])
def test_filters_apply_to_the_keyword_leg_too(corpus, strategy):
    # Both reports mention revenue; the filter keeps only one of them.
    unfiltered = {r["airweave_system_metadata"]["original_entity_id"]
                  for r in run(corpus, None, query="revenue quarter", strategy="keyword")}
    assert {"reports/2023/q1.md", "reports/2024/q2.md"} <= unfiltered
    got = matching(corpus, cond("breadcrumbs.name", "equals", "2023"), strategy=strategy, query="revenue quarter")
    assert got == {"reports/2023/q1.md"}


# --- invalid filters ---

@pytest.mark.parametrize("groups, loc, words", [
    ([{"conditions": [cond("colour", "equals", "red")]}], ["filter", 0, "conditions", 0, "field"], "unknown field"),
    ([{"conditions": [cond("name", "equals", "x"), cond("name", "like", "x")]}],
     ["filter", 0, "conditions", 1, "operator"], "unknown operator"),
    ([{"conditions": []}, {"conditions": [cond("name", "greater_than", "a")]}],
     ["filter", 1, "conditions", 0, "operator"], "greater_than"),
    ([{"conditions": [cond("breadcrumbs.name", "less_than", "a")]}], ["filter", 0, "conditions", 0, "operator"], "less_than"),
    ([{"conditions": [cond("name", "in", "Q1 report")]}], ["filter", 0, "conditions", 0, "value"], "list"),
    ([{"conditions": [cond("name", "not_in", [])]}], ["filter", 0, "conditions", 0, "value"], "list"),
    ([{"conditions": [cond("name", "equals", ["a", "b"])]}], ["filter", 0, "conditions", 0, "value"], "single value"),
    ([{"conditions": [cond("updated_at", "greater_than", "yesterday")]}], ["filter", 0, "conditions", 0, "value"], "ISO-8601"),
    ([{"conditions": [cond("updated_at", "greater_than", "2024-13-45")]}], ["filter", 0, "conditions", 0, "value"], "ISO-8601"),
    ([{"conditions": [cond("created_at", "less_than", 1700000000)]}], ["filter", 0, "conditions", 0, "value"], "ISO-8601"),
    ([{"conditions": [cond("airweave_system_metadata.chunk_index", "equals", "one")]}],
     ["filter", 0, "conditions", 0, "value"], "integer"),
    ([{"conditions": [cond("name", "equals", None)]}], ["filter", 0, "conditions", 0, "value"], "string"),
    ([{"conditions": [{"field": "name", "operator": "equals"}]}], ["filter", 0, "conditions", 0], "exactly"),
    ([{"conditions": [{"field": "name", "operator": "equals", "value": "x", "extra": 1}]}],
     ["filter", 0, "conditions", 0], "exactly"),
    ([{"must": []}], ["filter", 0], "conditions"),
    ([["name", "equals", "x"]], ["filter", 0], "conditions"),
    ({"conditions": [cond("name", "equals", "x")]}, ["filter"], "list"),
])
def test_invalid_filters_name_the_condition_and_show_an_example(groups, loc, words):
    with pytest.raises(FilterError) as info:
        compile_filter_groups(groups)
    assert info.value.loc == loc
    message = str(info.value)
    assert words.lower() in message.lower(), message
    assert EXAMPLE in message and "A valid filter looks like" in message


def test_invalid_filter_over_rest_is_422_with_location_and_example(corpus):
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=corpus.key)
    body = {"query": "report", "filter": [
        {"conditions": [cond("name", "equals", "Q1 report")]},
        {"conditions": [cond("name", "equals", "x"), cond("updated_at", "greater_than", "not a date")]},
    ]}
    r = api.post("/collections/corpus/search/instant", body, format="json")
    assert r.status_code == 422, r.content
    (item,) = r.json()["detail"]
    assert set(item) == {"loc", "msg", "type"}
    assert item["loc"] == ["body", "filter", 1, "conditions", 1, "value"]
    assert "not a date" in item["msg"] and "A valid filter looks like" in item["msg"]
    assert "airweave_system_metadata.source_name" in item["msg"]  # the example


def test_valid_filter_over_rest(corpus):
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=corpus.key)
    r = api.post("/collections/corpus/search/instant", {"query": "revenue", "filter": [
        {"conditions": [cond("updated_at", "greater_than_or_equal", "2024-06-30T00:00:00Z"),
                        cond("name", "contains", "report")]}]}, format="json")
    assert r.status_code == 200, r.content
    assert [x["airweave_system_metadata"]["original_entity_id"] for x in r.json()["results"]] == ["reports/2024/q2.md"]


@pytest.mark.parametrize("field", ["name", "breadcrumbs.name"])
def test_nul_in_a_filter_value_is_a_filter_error(corpus, field):
    api = APIClient()
    api.credentials(HTTP_X_API_KEY=corpus.key)
    api.raise_request_exception = False
    r = api.post("/collections/corpus/search/instant", {"query": "report", "filter": [
        {"conditions": [cond(field, "equals", "a\x00b")]}]}, format="json")
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "filter", 0, "conditions", 0, "value"]
