"""GET /metrics: refused when disabled or from an address outside the allow-list; from an allowed
one, the search histograms after real searches, the job and queue figures read from the database,
and provider fallbacks counted."""
from __future__ import annotations

import pytest
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from airweave.observability.exposition import metrics_client_allowed
from airweave.providers.chain import BREAKER, ProviderChain, ProviderSpec
from airweave.providers.errors import ProviderError

pytestmark = pytest.mark.django_db

DOCS = {"bees.md": "# Beekeeping\nThe queen bee lives in the hive; the beekeeper harvests honey in autumn.",
        "bread.md": "# Sourdough\nFeed the starter with flour and water, then bake the loaf in a hot oven."}


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition (parsed by prometheus_client)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict, name: str, **labels) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def collection(make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="metrics-docs")
    sync_folder(collection, write_files(DOCS))
    return collection


def test_metrics_after_searches_from_loopback(client, collection):
    before = samples(client.get("/metrics").content.decode())
    assert client.post(f"/collections/{collection.readable_id}/search/instant",
                       {"query": "honey bees", "limit": 5}, format="json").status_code == 200
    assert client.post(f"/collections/{collection.readable_id}/search",
                       {"query": "sourdough bread", "limit": 1, "expand_query": False, "rerank": False,
                        "generate_answer": False, "interpret_filters": False}, format="json").status_code == 200

    response = client.get("/metrics")  # the test client's REMOTE_ADDR is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    found = samples(response.content.decode())

    def grew(name, **labels):
        return (value(found, name, **labels) or 0) - (value(before, name, **labels) or 0)

    assert grew("airweave_search_duration_seconds_count", tier="instant", strategy="hybrid") == 1
    assert grew("airweave_search_duration_seconds_count", tier="pipeline", strategy="hybrid") == 1
    for operation in ("embed_query", "retrieval", "hydrate"):
        assert grew("airweave_search_operation_duration_seconds_count", tier="instant", operation=operation) == 1
    for operation in ("embed_query", "retrieval"):
        assert grew("airweave_search_operation_duration_seconds_count", tier="pipeline", operation=operation) == 1
    # Results returned: 2 documents for the instant search (limit 5), 1 for the pipeline (limit 1).
    assert grew("airweave_search_results_sum", tier="instant") == 2
    assert grew("airweave_search_results_sum", tier="pipeline") == 1
    assert grew("airweave_embedding_batch_seconds_count", model="local/all-MiniLM-L6-v2", kind="query") == 2
    # The sync ran in this process: its embedding slice is in the histogram too.
    assert value(found, "airweave_embedding_batch_seconds_count", model="local/all-MiniLM-L6-v2", kind="document") >= 1
    # Read from the database at scrape time: the completed job, its entities and stage seconds.
    assert value(found, "airweave_sync_jobs", state="completed") >= 1
    assert value(found, "airweave_sync_jobs", state="running") is not None
    assert value(found, "airweave_sync_entities_total", action="inserted") >= 2
    assert value(found, "airweave_sync_chunks_embedded_total") >= 2
    assert value(found, "airweave_sync_stage_seconds_total", stage="embedding") > 0
    assert value(found, "airweave_queue_depth") is not None


def test_metrics_refused_from_another_address(client):
    response = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
    assert response.status_code == 403
    assert "10.1.2.3" in response.json()["detail"] and "AIRWEAVE_METRICS_ALLOWED_IPS" in response.json()["detail"]
    assert b"airweave_" not in response.content


@override_settings(AIRWEAVE_METRICS_ALLOWED_IPS=["10.0.0.0/8"])
def test_metrics_allow_list_takes_networks(client):
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics").status_code == 403  # loopback is no longer listed


@override_settings(AIRWEAVE_METRICS_ENABLED=False)
def test_metrics_disabled_is_not_found(client):
    response = client.get("/metrics")
    assert response.status_code == 404
    assert "AIRWEAVE_METRICS_ENABLED" in response.json()["detail"]


def test_metrics_only_answers_get(client):
    assert client.post("/metrics").status_code == 405


@pytest.mark.parametrize("address, allowed", [
    ("127.0.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True), ("192.168.1.4", False),
    ("", False), (None, False), ("not-an-address", False), ("fe80::1%eth0", False),
])
def test_allow_list_addresses(address, allowed):
    assert metrics_client_allowed(address) is allowed


def test_provider_fallbacks_are_counted(client):
    def factory(spec):
        return spec

    def call(provider, spec):
        if spec.name == "flaky":
            raise ProviderError("503 from the vendor", retryable=True, status=503)
        return "answer"

    specs = [ProviderSpec(name=n, kind="local", model="m", api_key=None, base_url=None) for n in ("flaky", "steady")]
    BREAKER.reset()
    try:
        before = samples(client.get("/metrics").content.decode())
        assert ProviderChain("metrics_test", specs, factory).call(call) == ("answer", "steady/m")
        found = samples(client.get("/metrics").content.decode())
    finally:
        BREAKER.reset()
    name, labels = "airweave_provider_fallbacks_total", {"operation": "metrics_test", "provider": "flaky/m",
                                                         "reason": "error"}
    assert value(found, name, **labels) - (value(before, name, **labels) or 0) == 1
    assert value(found, name, operation="metrics_test", provider="steady/m", reason="error") is None  # it answered
