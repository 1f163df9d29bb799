"""OpenAICompatibleModel through the real `openai` SDK against a local server speaking OpenAI's wire format.

complete_json sends a strict json_schema response_format and parses the reply; complete_tools sends
function definitions and returns the model's tool calls; stream_text yields
the streamed deltas in order; every failure becomes a ProviderError whose `retryable` tells the
fallback chain what to do (429, 5xx, timeouts, dropped connections: retryable; other 4xx: not).
"""
from __future__ import annotations

import base64
import struct

import openai
import pytest

from airweave.providers import openai_compatible
from airweave.providers.errors import ProviderError
from airweave.providers.factory import build_provider
from airweave.providers.chain import provider_spec
from airweave.providers.openai_compatible import OpenAICompatibleModel
from tests.providers.vendor_server import PROVIDER_TIMEOUT_S, configure_provider, fake_embedding

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["alternatives"],
          "properties": {"alternatives": {"type": "array", "items": {"type": "string"}}}}
CHAT = "/v1/chat/completions"


@pytest.fixture
def server(vendor_server):
    return vendor_server("openai")


def model_for(server, model="gpt-4.1-mini", key="sk-test-key") -> OpenAICompatibleModel:
    return OpenAICompatibleModel(model=model, api_key=key, base_url=server.openai_base_url)


def ask(model):
    return model.complete_json(system="You rewrite queries.", user="Query: car repair\nWrite 2 alternatives.",
                               schema=SCHEMA, name="query_expansion")


# -- complete_json -------------------------------------------------------------------------------

def test_complete_json_returns_the_parsed_structured_reply(server):
    server.json_replies["query_expansion"] = {"alternatives": ["automobile maintenance", "fixing a vehicle"]}

    reply = ask(model_for(server))

    assert reply == {"alternatives": ["automobile maintenance", "fixing a vehicle"]}


def test_complete_json_sends_model_key_and_strict_json_schema(server):
    ask(model_for(server, model="gpt-4.1-mini", key="sk-test-secret"))

    [request] = server.requests
    assert request.method == "POST" and request.path == CHAT
    assert request.bearer == "sk-test-secret"
    body = request.body
    assert body["model"] == "gpt-4.1-mini"
    assert not body.get("stream")
    assert body["temperature"] == 0
    assert body["messages"] == [{"role": "system", "content": "You rewrite queries."},
                                {"role": "user", "content": "Query: car repair\nWrite 2 alternatives."}]
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "query_expansion", "schema": SCHEMA, "strict": True}}
    assert request.headers["content-type"].startswith("application/json")


def test_complete_json_reply_can_depend_on_the_request(server):
    server.json_replies["query_expansion"] = lambda body: {"alternatives": [body["model"].upper()]}

    assert ask(model_for(server, model="llama-3.3-70b-versatile")) == {"alternatives": ["LLAMA-3.3-70B-VERSATILE"]}


def test_complete_json_scripted_replies_are_consumed_in_order(server):
    server.json_replies["query_expansion"] = [{"alternatives": ["first"]}, {"alternatives": ["second"]}]
    model = model_for(server)

    assert ask(model)["alternatives"] == ["first"]
    assert ask(model)["alternatives"] == ["second"]
    assert len(server.requests_to(CHAT)) == 2


def test_complete_json_invalid_json_content_is_a_retryable_error(server):
    server.json_replies["query_expansion"] = '{"alternatives": ["unterminated'

    with pytest.raises(ProviderError) as caught:
        ask(model_for(server))

    assert caught.value.retryable is True
    assert "invalid JSON" in str(caught.value)


def test_build_provider_uses_the_environment_key_and_base_url(server, monkeypatch):
    key = configure_provider(monkeypatch, "groq", server)
    server.json_replies["query_expansion"] = {"alternatives": ["x"]}

    model = build_provider(provider_spec("groq/llama-3.3-70b-versatile"))
    assert isinstance(model, OpenAICompatibleModel)
    ask(model)

    [request] = server.requests
    assert request.bearer == key
    assert request.body["model"] == "llama-3.3-70b-versatile"


# -- stream_text ---------------------------------------------------------------------------------

def test_stream_text_yields_the_deltas_in_order(server):
    deltas = ["Sourdough ", "needs a ", "fed starter", " [[1]]", " — and patience ", "☕."]
    server.stream_replies = [deltas]

    received = list(model_for(server).stream_text(system="Answer.", user="How to bake bread?"))

    assert received == deltas
    assert "".join(received) == "".join(deltas)


def test_stream_text_requests_a_stream(server):
    list(model_for(server, key="sk-stream").stream_text(system="Answer.", user="Q?"))

    [request] = server.requests
    assert request.path == CHAT
    assert request.bearer == "sk-stream"
    assert request.body["stream"] is True
    assert request.body["model"] == "gpt-4.1-mini"
    assert "response_format" not in request.body
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]


def test_stream_text_is_lazy_and_yields_before_the_stream_ends(server):
    server.stream_replies = [["one ", "two ", "three"]]
    stream = model_for(server).stream_text(system="s", user="u")

    assert server.requests == []  # nothing is sent before the caller iterates
    assert next(stream) == "one "
    assert list(stream) == ["two ", "three"]


# -- error mapping -------------------------------------------------------------------------------

# -- complete_tools ------------------------------------------------------------------------------
LOOKUP = {"name": "lookup", "description": "Look a word up.", "parameters": {
    "type": "object", "additionalProperties": False, "required": ["word"], "properties": {"word": {"type": "string"}}}}


def test_complete_tools_sends_functions_and_returns_the_calls(server):
    server.tool_replies = [{"content": "Checking.", "calls": [("lookup", {"word": "tyre"}), ("lookup", {"word": "tire"})]}]
    turn = model_for(server).complete_tools(messages=[{"role": "user", "content": "spell it"}], tools=[LOOKUP])
    assert turn["content"] == "Checking."
    assert [(c["name"], c["arguments"]) for c in turn["tool_calls"]] == [("lookup", '{"word": "tyre"}'),
                                                                          ("lookup", '{"word": "tire"}')]
    assert all(c["id"].startswith("call_") for c in turn["tool_calls"])
    body = server.requests[0].body
    assert body["tools"] == [{"type": "function", "function": LOOKUP}] and body["tool_choice"] == "auto"


def test_complete_tools_without_calls_returns_the_text(server):
    server.tool_replies = [{"content": "No tool needed.", "calls": []}]
    turn = model_for(server).complete_tools(messages=[{"role": "user", "content": "hi"}], tools=[LOOKUP])
    assert turn == {"content": "No tool needed.", "tool_calls": []}


RETRYABLE = [429, 500, 502, 503, "html502", "timeout"]
NOT_RETRYABLE = [400, 401, 403, 404]


@pytest.mark.parametrize("failure", RETRYABLE)
@pytest.mark.parametrize("call", ["complete_json", "complete_tools", "stream_text"])
def test_rate_limits_server_errors_and_timeouts_are_retryable(server, failure, call):
    server.fail(failure)
    model = model_for(server)

    with pytest.raises(ProviderError) as caught:
        if call == "complete_json":
            ask(model)
        elif call == "complete_tools":
            model.complete_tools(messages=[{"role": "user", "content": "q"}], tools=[LOOKUP])
        else:
            list(model.stream_text(system="s", user="u"))

    assert caught.value.retryable is True
    if isinstance(failure, int):
        assert caught.value.status == failure
    elif failure == "html502":
        assert caught.value.status == 502
    else:
        assert "Timeout" in str(caught.value)
    assert len(server.requests) == 1, "the SDK's own retries must be off: the chain falls back instead"


@pytest.mark.parametrize("failure", NOT_RETRYABLE)
@pytest.mark.parametrize("call", ["complete_json", "stream_text"])
def test_client_errors_are_not_retryable(server, failure, call):
    server.fail(failure)
    model = model_for(server)

    with pytest.raises(ProviderError) as caught:
        if call == "complete_json":
            ask(model)
        elif call == "complete_tools":
            model.complete_tools(messages=[{"role": "user", "content": "q"}], tools=[LOOKUP])
        else:
            list(model.stream_text(system="s", user="u"))

    assert caught.value.retryable is False
    assert caught.value.status == failure
    assert len(server.requests) == 1


def test_timeout_is_the_configured_one(server):
    """The client gives up after its timeout (about PROVIDER_TIMEOUT_S), not after the server's 2 s sleep."""
    import time

    server.fail("timeout")
    started = time.monotonic()
    with pytest.raises(ProviderError):
        ask(model_for(server))
    elapsed = time.monotonic() - started
    assert elapsed < server.timeout_sleep_s, elapsed


def test_unreachable_endpoint_is_retryable(server):
    base_url = server.openai_base_url
    server.stop()

    with pytest.raises(ProviderError) as caught:
        ask(OpenAICompatibleModel(model="gpt-4.1-mini", api_key="k", base_url=base_url))

    assert caught.value.retryable is True
    assert "APIConnectionError" in str(caught.value)


@pytest.mark.parametrize("failure", ["stream_cut", "stream_stall"])
def test_a_stream_that_breaks_midway_is_retryable_after_the_partial_deltas(server, failure):
    server.partial_deltas = ["Partial ", "answer "]
    server.fail(failure)
    received = []

    with pytest.raises(ProviderError) as caught:
        for delta in model_for(server).stream_text(system="s", user="u"):
            received.append(delta)

    assert caught.value.retryable is True
    assert received == ["Partial ", "answer "]


def test_an_error_frame_inside_the_stream_is_a_retryable_provider_error(server):
    server.fail("stream_error")

    with pytest.raises(ProviderError) as caught:
        list(model_for(server).stream_text(system="s", user="u"))

    assert caught.value.retryable is True


def test_timeout_constant_is_read_at_call_time(server, monkeypatch):
    monkeypatch.setattr(openai_compatible, "TIMEOUT_S", 0.25)
    configure_provider(monkeypatch, "openai", server)

    model = build_provider(provider_spec("openai/gpt-4.1-mini"))

    assert model.client.timeout == 0.25


def test_fixture_timeout_reaches_the_client(server, monkeypatch):
    configure_provider(monkeypatch, "openai", server)
    assert build_provider(provider_spec("openai/gpt-4.1-mini")).client.timeout == PROVIDER_TIMEOUT_S


# -- the server itself: OpenAI's embeddings wire format (the SDK decodes base64 by default) ------------

@pytest.mark.parametrize("encoding_format", [None, "float", "base64"])
def test_embeddings_endpoint_speaks_openai_format(server, encoding_format):
    client = openai.OpenAI(api_key="sk-emb", base_url=server.openai_base_url, max_retries=0, timeout=5)
    kwargs = {"encoding_format": encoding_format} if encoding_format else {}

    response = client.embeddings.create(model="text-embedding-3-small", input=["alpha", "beta"], dimensions=8,
                                        **kwargs)

    assert [d.index for d in response.data] == [0, 1]
    for item, text in zip(response.data, ["alpha", "beta"]):
        if encoding_format == "base64":
            decoded = struct.unpack("<8f", base64.b64decode(item.embedding))
            assert decoded == pytest.approx(fake_embedding(text, 8), abs=1e-6)
        else:
            assert item.embedding == pytest.approx(fake_embedding(text, 8), abs=1e-6)
    assert response.model == "text-embedding-3-small"
    assert response.usage.total_tokens == 2
    [request] = server.requests_to("/v1/embeddings")
    assert request.bearer == "sk-emb"
    assert request.body["encoding_format"] == (encoding_format or "base64")
