"""ProviderChain (defaults.yml `operations`) with the real factory and SDKs against local vendor servers.

Server A plays OpenAI, server B plays Groq (the next entry of the language-model chains), server C
plays Cohere. A retryable failure of A moves the call to B and the returned label says so; a
provider without its key is skipped without a request; a non-retryable failure is raised; the
circuit breaker stops calling a provider after BREAKER_FAILURES consecutive failures.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from airweave.providers import chain as chain_module
from airweave.providers.chain import BREAKER, BREAKER_FAILURES, ProviderChain
from airweave.providers.errors import NoProviderAvailable, ProviderError
from airweave.providers.factory import build_provider, chain_for
from tests.providers.vendor_server import configure_provider

CHAT = "/v1/chat/completions"
OPENAI = "openai/gpt-4.1-mini"
GROQ = "groq/llama-3.3-70b-versatile"
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["alternatives"],
          "properties": {"alternatives": {"type": "array", "items": {"type": "string"}}}}


@pytest.fixture
def servers(vendor_server, monkeypatch):
    """OpenAI at server A and Groq at server B, both configured through the environment."""
    a, b = vendor_server("openai"), vendor_server("groq")
    a.json_replies["query_expansion"] = lambda body: {"alternatives": ["from openai"]}
    b.json_replies["query_expansion"] = lambda body: {"alternatives": ["from groq"]}
    a.key = configure_provider(monkeypatch, "openai", a)
    b.key = configure_provider(monkeypatch, "groq", b)
    return a, b


def expansion_chain() -> ProviderChain:
    return ProviderChain.for_operation("query_expansion", build_provider)


def expand(chain: ProviderChain):
    return chain.call(lambda model, spec: model.complete_json(system="s", user="Query: q", schema=SCHEMA,
                                                              name="query_expansion"))


def test_chain_entries_follow_defaults_yml():
    from airweave.providers.catalog import load_defaults

    for operation, entries in load_defaults()["operations"].items():
        chain = ProviderChain.for_operation(operation, build_provider)
        assert [s.label for s in chain.specs] == entries
    assert [s.label for s in chain_for("query_expansion").specs][:2] == [OPENAI, GROQ]


def test_first_provider_answers_when_healthy(servers):
    a, b = servers

    reply, label = expand(expansion_chain())

    assert (reply, label) == ({"alternatives": ["from openai"]}, OPENAI)
    [request] = a.requests
    assert request.bearer == a.key and request.body["model"] == "gpt-4.1-mini"
    assert b.requests == []


@pytest.mark.parametrize("failure", [429, 500, 503, "html502", "timeout"])
def test_retryable_failure_falls_back_to_the_next_provider(servers, failure):
    a, b = servers
    a.fail(failure)

    reply, label = expand(expansion_chain())

    assert label == GROQ
    assert reply == {"alternatives": ["from groq"]}
    assert [r.failure for r in a.requests] == [failure]
    [request] = b.requests
    assert request.bearer == b.key
    assert request.body["model"] == "llama-3.3-70b-versatile"
    assert request.body["response_format"]["json_schema"]["name"] == "query_expansion"


def test_unreachable_first_provider_falls_back(servers):
    a, b = servers
    a.stop()

    _, label = expand(expansion_chain())

    assert label == GROQ and len(b.requests) == 1


def test_429_then_500_then_timeout_each_answered_by_the_next_provider_then_the_breaker_opens(servers):
    a, b = servers
    for failure in (429, 500, "timeout"):
        a.fail(failure)
    assert BREAKER_FAILURES == 3  # this sequence is three consecutive failures

    labels = [expand(expansion_chain())[1] for _ in range(3)]

    assert labels == [GROQ, GROQ, GROQ]
    assert [r.failure for r in a.requests] == [429, 500, "timeout"]
    assert len(b.requests) == 3
    # A is healthy again, but its circuit is open: it is not even asked.
    _, label = expand(expansion_chain())
    assert label == GROQ
    assert len(a.requests) == 3 and len(b.requests) == 4


def test_provider_without_its_key_is_skipped_without_a_request(servers, monkeypatch):
    a, b = servers
    monkeypatch.delenv("OPENAI_API_KEY")  # OPENAI_BASE_URL still points at server A

    chain = expansion_chain()
    assert [s.label for s in chain.available()] == [GROQ]
    _, label = expand(chain)

    assert label == GROQ
    assert a.requests == []


def test_key_optional_provider_needs_only_its_endpoint(vendor_server, monkeypatch):
    ollama = vendor_server("ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", ollama.openai_base_url)

    _, label = expand(expansion_chain())

    assert label == "ollama/llama3.2"
    [request] = ollama.requests
    assert request.bearer == "not-needed"
    assert request.body["model"] == "llama3.2"


@pytest.mark.parametrize("status", [400, 401])
def test_non_retryable_failure_is_raised_and_the_chain_stops(servers, status):
    a, b = servers
    a.fail(status)

    with pytest.raises(ProviderError) as caught:
        expand(expansion_chain())

    assert caught.value.retryable is False and caught.value.status == status
    assert b.requests == []
    assert not BREAKER.is_open("openai")


def test_breaker_opens_after_consecutive_failures_and_the_provider_is_not_called(servers):
    a, b = servers
    a.fail(500, times=None)
    for _ in range(BREAKER_FAILURES):
        assert not BREAKER.is_open("openai")
        assert expand(expansion_chain())[1] == GROQ
    assert BREAKER.is_open("openai")
    a.clear_failures()
    seen = len(a.requests)

    for _ in range(3):
        assert expand(expansion_chain())[1] == GROQ

    assert len(a.requests) == seen == BREAKER_FAILURES


def test_breaker_closes_after_reset(servers):
    a, b = servers
    a.fail(500, times=BREAKER_FAILURES)
    for _ in range(BREAKER_FAILURES):
        expand(expansion_chain())
    assert BREAKER.is_open("openai")

    BREAKER.reset()

    assert expand(expansion_chain())[1] == OPENAI
    assert len(a.requests) == BREAKER_FAILURES + 1


def test_breaker_half_opens_after_cooldown_and_success_closes_it(servers, monkeypatch):
    a, b = servers
    clock = [1000.0]  # the breaker's own clock, so the test needs no sleep
    monkeypatch.setattr(chain_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    a.fail(500, times=BREAKER_FAILURES)
    for _ in range(BREAKER_FAILURES):
        expand(expansion_chain())
    assert BREAKER.is_open("openai")
    assert expand(expansion_chain())[1] == GROQ  # still open: A not asked
    assert len(a.requests) == BREAKER_FAILURES

    clock[0] += chain_module.BREAKER_COOLDOWN_S - 0.1
    assert BREAKER.is_open("openai")
    clock[0] += 0.2

    assert expand(expansion_chain())[1] == OPENAI  # tried again after the cooldown, and it answered
    assert not BREAKER.is_open("openai")
    # the success cleared the count: two more failures do not open the circuit again
    a.fail(500, times=BREAKER_FAILURES - 1)
    for _ in range(BREAKER_FAILURES - 1):
        assert expand(expansion_chain())[1] == GROQ
    assert not BREAKER.is_open("openai")


def test_only_consecutive_failures_count(servers):
    a, b = servers
    for _ in range(3):
        a.fail(500, times=BREAKER_FAILURES - 1)
        for _ in range(BREAKER_FAILURES - 1):
            assert expand(expansion_chain())[1] == GROQ
        assert expand(expansion_chain())[1] == OPENAI  # success in between resets the count
    assert not BREAKER.is_open("openai")


def test_no_provider_available_lists_every_reason(servers):
    a, b = servers
    a.fail(500)
    b.fail(429)

    with pytest.raises(NoProviderAvailable) as caught:
        expand(expansion_chain())

    reasons = caught.value.reasons
    assert caught.value.operation == "query_expansion"
    assert list(reasons) == [s.label for s in expansion_chain().specs]
    assert reasons[OPENAI].startswith("HTTP 500")
    assert reasons[GROQ].startswith("HTTP 429")
    assert reasons["cerebras/llama-3.3-70b"] == "no API key (set CEREBRAS_API_KEY)"
    assert reasons["ollama/llama3.2"] == "no endpoint (set OLLAMA_BASE_URL)"
    message = str(caught.value)
    assert "HTTP 500" in message and "HTTP 429" in message and "CEREBRAS_API_KEY" in message


def test_no_provider_available_names_an_open_circuit(servers):
    a, b = servers
    a.fail(500, times=None)
    b.fail(503, times=None)
    for _ in range(BREAKER_FAILURES):
        with pytest.raises(NoProviderAvailable):
            expand(expansion_chain())

    with pytest.raises(NoProviderAvailable) as caught:
        expand(expansion_chain())

    assert caught.value.reasons[OPENAI] == "circuit open after repeated failures"
    assert caught.value.reasons[GROQ] == "circuit open after repeated failures"
    assert len(a.requests) == len(b.requests) == BREAKER_FAILURES


def test_no_keys_at_all_means_no_provider_with_reasons():
    with pytest.raises(NoProviderAvailable) as caught:
        expand(expansion_chain())

    assert all(why.startswith(("no API key", "no endpoint")) for why in caught.value.reasons.values())


def test_answer_chain_ends_with_the_local_extractive_answer():
    result, label = chain_for("generate_answer").call(lambda model, spec: model)

    assert (result, label) == ("extractive", "local/extractive")


def test_streamed_answer_falls_back_to_the_next_provider(servers):
    a, b = servers
    a.fail(503)
    b.stream_replies = [["Groq ", "answers ", "[[1]]."]]

    text, label = chain_for("generate_answer").call(
        lambda model, spec: "".join(model.stream_text(system="s", user="u")))

    assert (text, label) == ("Groq answers [[1]].", GROQ)
    assert b.requests[0].body["stream"] is True


def test_error_frame_mid_stream_falls_back_to_the_next_provider(servers):
    a, b = servers
    a.fail("stream_error")
    b.stream_replies = [["Groq ", "answers."]]

    text, label = chain_for("generate_answer").call(
        lambda model, spec: "".join(model.stream_text(system="s", user="u")))

    assert label == GROQ


# -- reranking chain: Cohere, then the local cross-encoder (absent in tests) -------------------------

def rerank(chain):
    return chain.call(lambda reranker, spec: reranker.rerank("sourdough", ["bread", "sourdough bread"], top_n=2))


def test_rerank_chain_uses_cohere(vendor_server, monkeypatch):
    c = vendor_server("cohere")
    configure_provider(monkeypatch, "cohere", c)

    ranking, label = rerank(chain_for("reranking"))

    assert label == "cohere/rerank-v3.5"
    assert [i for i, _ in ranking] == [1, 0]
    assert c.requests[0].path == "/v2/rerank"


def test_rerank_chain_with_failing_cohere_and_no_cross_encoder_lists_reasons(vendor_server, monkeypatch):
    c = vendor_server("cohere")
    configure_provider(monkeypatch, "cohere", c)
    c.fail("timeout")

    with pytest.raises(NoProviderAvailable) as caught:
        rerank(chain_for("reranking"))

    assert caught.value.reasons["cohere/rerank-v3.5"].startswith("timeout")
    assert caught.value.reasons["local/cross-encoder"].startswith("no cross-encoder weights on disk")
