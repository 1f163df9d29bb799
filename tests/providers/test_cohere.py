"""CohereReranker through the real `cohere` SDK (ClientV2) against a local server speaking Cohere's v2 rerank format."""
from __future__ import annotations

import time

import pytest

from airweave.providers.chain import ProviderChain, provider_spec
from airweave.providers.cohere_provider import CohereReranker
from airweave.providers.errors import ProviderError
from airweave.providers.factory import build_provider
from tests.providers.vendor_server import PROVIDER_TIMEOUT_S, configure_provider

RERANK = "/v2/rerank"
DOCS = [
    "Jupiter is the largest planet of the solar system.",
    "Feed the sourdough starter with flour and water.",
    "To fix a flat tyre, glue a patch over the puncture.",
    "Bake the sourdough loaf in a hot Dutch oven.",
]


@pytest.fixture
def server(vendor_server):
    return vendor_server("cohere")


def reranker_for(server, key="co-test-key", model="rerank-v3.5") -> CohereReranker:
    return CohereReranker(model=model, api_key=key, base_url=server.url)


def test_rerank_returns_indices_and_scores_best_first(server):
    scores = [0.05, 0.61, 0.01, 0.93]
    server.rerank_scores = lambda query, documents: scores

    ranking = reranker_for(server).rerank("sourdough bread", DOCS, top_n=4)

    assert ranking == [(3, 0.93), (1, 0.61), (0, 0.05), (2, 0.01)]
    assert all(isinstance(i, int) and isinstance(s, float) for i, s in ranking)


def test_rerank_sends_model_query_documents_and_top_n_with_bearer_key(server):
    reranker_for(server, key="co-secret", model="rerank-v3.5").rerank("sourdough bread", DOCS, top_n=2)

    [request] = server.requests
    assert request.method == "POST" and request.path == RERANK
    assert request.bearer == "co-secret"
    assert request.body["model"] == "rerank-v3.5"
    assert request.body["query"] == "sourdough bread"
    assert request.body["documents"] == DOCS
    assert request.body["top_n"] == 2


def test_rerank_honours_top_n(server):
    ranking = reranker_for(server).rerank("sourdough starter flour", DOCS, top_n=2)

    assert [i for i, _ in ranking] == [1, 3]  # word overlap: doc 1 has 3 of 3 words, doc 3 has 1


def test_build_provider_uses_the_environment_key_and_base_url(server, monkeypatch):
    key = configure_provider(monkeypatch, "cohere", server)

    reranker = build_provider(provider_spec("cohere/rerank-v3.5"))
    assert isinstance(reranker, CohereReranker)
    reranker.rerank("planet", DOCS, top_n=1)

    [request] = server.requests
    assert request.bearer == key
    assert request.body["model"] == "rerank-v3.5"


RETRYABLE = [429, 500, 502, 503, "html502", "timeout"]
NOT_RETRYABLE = [400, 401, 403, 404]


@pytest.mark.parametrize("failure", RETRYABLE)
def test_rate_limits_server_errors_and_timeouts_are_retryable(server, failure):
    server.fail(failure)
    started = time.monotonic()

    with pytest.raises(ProviderError) as caught:
        reranker_for(server).rerank("planet", DOCS, top_n=4)

    assert caught.value.retryable is True
    if failure == "timeout":
        assert "timeout" in str(caught.value)
        assert time.monotonic() - started < server.timeout_sleep_s
    else:
        assert caught.value.status == (502 if failure == "html502" else failure)
    assert len(server.requests) == 1, "the SDK's own retries must be off: the chain falls back instead"


@pytest.mark.parametrize("failure", NOT_RETRYABLE)
def test_client_errors_are_not_retryable(server, failure):
    server.fail(failure)

    with pytest.raises(ProviderError) as caught:
        reranker_for(server).rerank("planet", DOCS, top_n=4)

    assert caught.value.retryable is False
    assert caught.value.status == failure
    assert len(server.requests) == 1


def test_unreachable_endpoint_is_retryable(server):
    url = server.url
    server.stop()

    with pytest.raises(ProviderError) as caught:
        CohereReranker(model="rerank-v3.5", api_key="k", base_url=url).rerank("planet", DOCS, top_n=4)

    assert caught.value.retryable is True


def test_fixture_timeout_reaches_the_client(server, monkeypatch):
    configure_provider(monkeypatch, "cohere", server)
    reranker = build_provider(provider_spec("cohere/rerank-v3.5"))
    assert reranker.client._client_wrapper.get_timeout() == PROVIDER_TIMEOUT_S


def test_cohere_with_only_its_key_is_available(monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-live-key")
    chain = ProviderChain.for_operation("reranking", build_provider)

    assert [s.label for s in chain.available()] == ["cohere/rerank-v3.5"]
