"""A small local HTTP server that speaks the vendors' wire formats, so the real SDKs run in tests.

`openai` 3.x sends its requests through its own `httpx2`, which transport-level mocks (respx,
responses) do not see; the `cohere` SDK uses `httpx`. Both are tested the same way: against a
real socket on 127.0.0.1 (port 0), served by `http.server.ThreadingHTTPServer` in a daemon thread.

Endpoints (shapes as the vendors document them):

- OpenAI `POST /v1/chat/completions`
  - non-streaming: a `chat.completion` object. With `response_format: {type: json_schema,
    json_schema: {name, schema, strict}}` the assistant content is JSON chosen per schema `name`
    (`server.json_replies[name]`: a list consumed in order, a dict, or a callable(body) → dict;
    a str is sent verbatim as the content, e.g. to script invalid JSON);
    the reply is validated against the request's schema and any violation is recorded in
    `server.schema_violations` (the fixture fails the test on teardown).
  - with `tools` (function calling): an assistant message with `tool_calls` (`finish_reason:
    "tool_calls"`) from `server.tool_replies` (a list of `{content, calls: [(name, arguments)]}`
    consumed in order, or a callable(body)); dict arguments are checked against the declared
    function's `parameters` schema (violations recorded), str arguments are sent verbatim.
  - streaming (`stream: true`): `text/event-stream`, chunked transfer encoding, one
    `data: {chat.completion.chunk}` frame per delta (first one carries the role), a final chunk
    with `finish_reason: "stop"`, a usage chunk when `stream_options.include_usage`, then
    `data: [DONE]`. Deltas come from `server.stream_replies` (list of lists consumed in order, or
    a callable(body) → list[str]), else `server.default_stream`.
- OpenAI `POST /v1/embeddings`: `{object: list, data: [{object: embedding, index, embedding}],
  model, usage}`; honours `encoding_format` ("float" or "base64" — the SDK asks for base64 by
  default) and `dimensions`. Vectors are deterministic (hash of the text).
- Cohere v2 `POST /v2/embed`: `{id, embeddings: {float: [[...]]}, texts, meta, response_type:
  "embeddings_by_type"}`; 1-96 texts and an `input_type` required (as for v3 models); vectors
  `server.embedding_dims` long (deterministic, hash of the text).
- Cohere v2 `POST /v2/rerank`: `{id, results: [{index, relevance_score}], meta: {api_version,
  billed_units}}`, best first, `top_n` honoured. Scores come from `server.rerank_scores`
  (callable(query, documents) → one score per document), by default word overlap.

Scripted failures: `server.fail(kind, times=1, path=None)` makes the next `times` requests (to
`path`, or any path; `times=None` for every request) fail as `kind`:
  429 (with `Retry-After`), 400, 401, 500, 503 — the vendor's JSON error body;
  "html502" — a proxy's HTML 502 page;
  "timeout" — sleep `server.timeout_sleep_s` before answering (longer than the client timeout);
  "stream_cut" — stream `server.partial_deltas` deltas then drop the connection mid-body;
  "stream_stall" — stream the partial deltas then stall past the client timeout;
  "stream_error" — stream the partial deltas then an in-stream `data: {"error": ...}` frame
  (what OpenAI sends when a server error happens after the 200 was committed).

Every request is recorded in `server.requests` (method, path, JSON body, lower-cased headers).
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

STATUS_FAILURES = (400, 401, 403, 404, 429, 500, 502, 503)
FAILURE_KINDS = (*STATUS_FAILURES, "html502", "timeout", "stream_cut", "stream_stall", "stream_error")

_OPENAI_ERRORS = {
    400: ("invalid_request_error", "invalid_value", "Invalid value for 'model'."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test***. You can find your API key at https://platform.openai.com/account/api-keys."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"),
    404: ("invalid_request_error", "model_not_found", "The model `x` does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for gpt-4.1-mini in organization org-test on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
}
_COHERE_ERRORS = {
    400: "invalid request: list of documents must not be empty",
    401: "invalid api token",
    403: "forbidden",
    404: "model 'x' not found, make sure the correct model ID was used and that you have access to the model.",
    429: "You are using a Trial key, which is limited to 10 API calls / minute. You can continue to use the Trial key for free or upgrade to a Production key with higher rate limits at 'https://dashboard.cohere.com/api-keys'.",
    500: "internal server error, this has been reported to our developers",
    502: "bad gateway",
    503: "service unavailable",
}
_WORD = re.compile(r"\w+")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    failure: Any = None  # the scripted failure this request got, if any

    @property
    def bearer(self) -> str | None:
        auth = self.headers.get("authorization", "")
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else None


@dataclass
class _Failure:
    kind: Any
    remaining: int | None  # None: forever
    path: str | None


def overlap_scores(query: str, documents: list[str]) -> list[float]:
    """Default rerank scores: the share of query words found in the document (in [0, 1])."""
    words = {w.lower() for w in _WORD.findall(query)}
    out = []
    for doc in documents:
        found = {w.lower() for w in _WORD.findall(doc)}
        out.append(round(len(words & found) / max(1, len(words)), 6))
    return out


def fake_embedding(text: str, dims: int) -> list[float]:
    """A deterministic unit vector for `text` (from SHA-256), `dims` long."""
    values = []
    counter = 0
    while len(values) < dims:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dims]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


class VendorServer:
    """One fake vendor endpoint. Start with `start()` (or use the pytest fixture), stop with `stop()`."""

    def __init__(self, name: str = "vendor"):
        self.name = name
        self.requests: list[RecordedRequest] = []
        self.schema_violations: list[str] = []
        self.json_replies: dict[str, Any] = {}
        self.stream_replies: Any = []  # list of list[str] consumed in order, or callable(body) -> list[str]
        self.default_stream: list[str] = ["The answer ", "is in the ", "first result. [[1]]"]
        self.tool_replies: Any = []  # list of {"content", "calls": [(name, args)]} consumed in order, or callable(body)
        self.rerank_scores: Callable[[str, list[str]], list[float]] = overlap_scores
        self.embedding_dims = 1536
        self.timeout_sleep_s = 2.0
        self.partial_deltas: list[str] = ["Partial ", "answer "]
        self._failures: list[_Failure] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "VendorServer":
        server = self

        class Handler(_Handler):
            vendor = server

        self._stopping.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"vendor-server-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket: later requests get 'connection refused'."""
        self._stopping.set()  # wakes handlers sleeping in a scripted timeout
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def fail(self, kind, times: int | None = 1, path: str | None = None) -> "VendorServer":
        if kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure {kind!r}; one of {FAILURE_KINDS}")
        with self._lock:
            self._failures.append(_Failure(kind, times, path))
        return self

    def clear_failures(self) -> None:
        with self._lock:
            self._failures.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def _take_failure(self, path: str):
        with self._lock:
            for failure in self._failures:
                if failure.path is not None and failure.path != path:
                    continue
                if failure.remaining is not None:
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                return failure.kind
        return None

    def _json_reply(self, name: str, body: dict) -> dict:
        with self._lock:
            script = self.json_replies.get(name)
            if isinstance(script, list):
                if not script:
                    raise LookupError(f"no scripted reply left for json_schema '{name}'")
                script = script.pop(0)
        if callable(script):
            return script(body)
        if isinstance(script, (dict, str)):
            return script
        return _empty_for(name, body)

    def _tool_reply(self, body: dict) -> dict:
        """The scripted assistant turn for a request with `tools`: {"content": str, "calls": [(name, args)]}."""
        with self._lock:
            script = self.tool_replies
            if isinstance(script, list):
                if not script:
                    raise LookupError("no scripted tool-calling reply left")
                script = script.pop(0)
        reply = script(body) if callable(script) else script
        return reply or {"content": "Nothing to do.", "calls": []}

    def _stream_reply(self, body: dict) -> list[str]:
        with self._lock:
            script = self.stream_replies
            if callable(script):
                pass
            elif script:
                return list(script.pop(0))
            else:
                return list(self.default_stream)
        return list(script(body))


def _empty_for(name: str, body: dict) -> dict:
    """A minimal reply that satisfies the request's schema when nothing was scripted."""
    if name == "query_expansion":
        return {"alternatives": []}
    if name == "query_interpretation":
        return {"filters": [], "confidence": 0.0}
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
    defaults = {"array": [], "string": "", "number": 0, "integer": 0, "boolean": False, "object": {}}
    return {k: defaults.get(v.get("type"), None) for k, v in schema.get("properties", {}).items()}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    vendor: VendorServer

    def log_message(self, format, *args):  # keep pytest output clean
        pass

    # -- plumbing ----------------------------------------------------------------------------
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        path = self.path.split("?", 1)[0]
        failure = self.vendor._take_failure(path)
        self.vendor.requests.append(RecordedRequest(
            method="POST", path=path, headers={k.lower(): v for k, v in self.headers.items()}, body=body,
            failure=failure))
        try:
            self._dispatch(path, body, failure)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout)

    def do_GET(self):
        self._send_json(404, {"error": {"message": f"Unknown request URL: GET {self.path}", "type": "invalid_request_error"}})

    def _dispatch(self, path: str, body, failure) -> None:
        is_cohere = path.startswith("/v2/") or path.startswith("/v1/rerank")
        if failure == "timeout":
            self.vendor._stopping.wait(self.vendor.timeout_sleep_s)
        elif failure == "html502":
            self._send_raw(502, b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway"
                                b"</h1></center><hr><center>nginx</center></body></html>", "text/html")
            return
        elif isinstance(failure, int):
            self._send_error(failure, is_cohere)
            return
        if not isinstance(body, dict):
            self._send_json(400, {"error": {"message": "We could not parse the JSON body of your request.",
                                            "type": "invalid_request_error", "param": None, "code": None}})
            return
        if path == "/v1/chat/completions":
            if body.get("stream"):
                self._chat_stream(body, failure)
            else:
                self._chat(body)
        elif path == "/v1/embeddings":
            self._embeddings(body)
        elif path == "/v2/rerank":
            self._rerank(body)
        elif path == "/v2/embed":
            self._cohere_embed(body)
        else:
            self._send_json(404, {"error": {"message": f"Unknown request URL: POST {path}.",
                                            "type": "invalid_request_error", "param": None, "code": "unknown_url"}})

    def _send_raw(self, status: int, data: bytes, content_type: str, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_json(self, status: int, payload, headers: dict | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_error(self, status: int, is_cohere: bool) -> None:
        headers = {"x-request-id": f"req_{uuid.uuid4().hex}"}
        if status == 429:
            headers.update({"Retry-After": "20", "x-ratelimit-limit-requests": "3",
                            "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s"})
        if is_cohere:
            self._send_json(status, {"id": str(uuid.uuid4()), "message": _COHERE_ERRORS.get(status, "error")}, headers)
        else:
            kind, code, message = _OPENAI_ERRORS.get(status, ("server_error", None, "error"))
            self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, headers)

    # -- OpenAI ------------------------------------------------------------------------------
    def _chat(self, body: dict) -> None:
        response_format = body.get("response_format") or {}
        tool_calls = None
        if body.get("tools"):
            reply = self.vendor._tool_reply(body)
            content = reply.get("content") or ""
            tool_calls = [self._tool_call(body["tools"], name, arguments) for name, arguments in reply.get("calls", [])]
        elif response_format.get("type") == "json_schema":
            spec = response_format.get("json_schema") or {}
            name = spec.get("name", "")
            reply = self.vendor._json_reply(name, body)
            if isinstance(reply, str):  # a raw (possibly broken) content string, sent as is
                content = reply
            else:
                _validate(self.vendor, name, spec.get("schema") or {}, reply)
                content = json.dumps(reply)
        elif response_format.get("type") == "json_object":
            content = json.dumps(self.vendor._json_reply("json_object", body))
        else:
            content = "".join(self.vendor._stream_reply(body))
        prompt_tokens = sum(len(_WORD.findall(str(m.get("content", "")))) for m in body.get("messages", []))
        completion_tokens = len(_WORD.findall(content))
        self._send_json(200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content or (None if tool_calls else ""),
                            "refusal": None, "annotations": [], **({"tool_calls": tool_calls} if tool_calls else {})},
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                    "accepted_prediction_tokens": 0,
                                                    "rejected_prediction_tokens": 0}},
            "service_tier": "default",
            "system_fingerprint": "fp_vendorserver",
        }, {"x-request-id": f"req_{uuid.uuid4().hex}", "openai-processing-ms": "12"})

    def _tool_call(self, tools: list, name: str, arguments) -> dict:
        """One `tool_calls` item; dict arguments of a declared tool are checked against its schema."""
        declared = {t["function"]["name"]: t["function"] for t in tools if t.get("type") == "function"}
        if isinstance(arguments, dict):
            if name in declared:
                _validate(self.vendor, f"tool {name}", declared[name].get("parameters") or {}, arguments)
            arguments = json.dumps(arguments)
        return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                "function": {"name": name, "arguments": arguments}}

    def _chat_stream(self, body: dict, failure) -> None:
        model = body.get("model")
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())

        def chunk(delta: dict, finish_reason=None, **extra) -> dict:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                    "service_tier": "default", "system_fingerprint": "fp_vendorserver",
                    "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
                    **extra}

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", f"req_{uuid.uuid4().hex}")
        self.end_headers()
        self._sse(chunk({"role": "assistant", "content": "", "refusal": None}))
        if failure in ("stream_cut", "stream_stall", "stream_error"):
            for delta in self.vendor.partial_deltas:
                self._sse(chunk({"content": delta}))
            if failure == "stream_cut":
                # Drop the connection without the terminating zero-length chunk.
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if failure == "stream_stall":
                self.vendor._stopping.wait(self.vendor.timeout_sleep_s)
                self.close_connection = True
                return
            self._sse({"error": {"message": "The server had an error while processing your request. Sorry about that!",
                                 "type": "server_error", "param": None, "code": None}})
            self._end_chunks()
            return
        deltas = self.vendor._stream_reply(body)
        for delta in deltas:
            self._sse(chunk({"content": delta}))
        self._sse(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            tokens = len(_WORD.findall("".join(deltas)))
            self._sse({"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": tokens,
                                                "total_tokens": 10 + tokens}})
        self._write_chunk(b"data: [DONE]\n\n")
        self._end_chunks()

    def _sse(self, payload: dict) -> None:
        self._write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _embeddings(self, body: dict) -> None:
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not inputs or not all(isinstance(i, str) for i in inputs):
            self._send_json(400, {"error": {"message": "'input' : input must be a string or an array of strings",
                                            "type": "invalid_request_error", "param": None, "code": None}})
            return
        dims = int(body.get("dimensions") or self.vendor.embedding_dims)
        data = []
        for index, text in enumerate(inputs):
            vector = fake_embedding(text, dims)
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{dims}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(_WORD.findall(t)) for t in inputs)
        self._send_json(200, {"object": "list", "data": data, "model": body.get("model"),
                              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    # -- Cohere ------------------------------------------------------------------------------
    def _cohere_embed(self, body: dict) -> None:
        texts = body.get("texts") or []
        if not texts or len(texts) > 96 or body.get("input_type") not in {"search_document", "search_query",
                                                                          "classification", "clustering"}:
            self._send_json(400, {"id": str(uuid.uuid4()), "message": "invalid request: texts must hold 1 to 96 "
                                  "strings and input_type is required for embed-english-v3.0"})
            return
        dims = int(body.get("output_dimension") or self.vendor.embedding_dims)
        self._send_json(200, {
            "id": str(uuid.uuid4()),
            "embeddings": {"float": [fake_embedding(t, dims) for t in texts]},
            "texts": texts,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": sum(len(_WORD.findall(t)) for t in texts)}},
            "response_type": "embeddings_by_type",
        }, {"x-request-id": uuid.uuid4().hex})

    def _rerank(self, body: dict) -> None:
        documents = body.get("documents") or []
        if not documents:
            self._send_json(400, {"id": str(uuid.uuid4()), "message": _COHERE_ERRORS[400]})
            return
        texts = [d if isinstance(d, str) else json.dumps(d) for d in documents]
        scores = list(self.vendor.rerank_scores(body.get("query", ""), texts))
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        top_n = body.get("top_n")
        if top_n:
            order = order[:int(top_n)]
        self._send_json(200, {
            "id": str(uuid.uuid4()),
            "results": [{"index": i, "relevance_score": float(scores[i])} for i in order],
            "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}},
        }, {"x-request-id": uuid.uuid4().hex})


def _validate(vendor: VendorServer, name: str, schema: dict, reply) -> None:
    """Structured outputs promise a reply that conforms; record any scripted reply that does not."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a dev dependency
        return
    try:
        jsonschema.validate(reply, schema)
    except jsonschema.ValidationError as exc:
        vendor.schema_violations.append(f"{name}: {exc.message}")


# -- pytest fixtures shared by tests/providers and tests/search/test_pipeline_with_providers.py ------
# (defined here, imported by name where used, so that no test module imports a conftest)

import pytest  # noqa: E402

PROVIDER_TIMEOUT_S = 1.0  # client timeout in tests; scripted "timeout" failures sleep 2 s


def provider_env_names() -> list[str]:
    """Every environment variable a chain reads: `<NAME>_API_KEY`-style keys and `<NAME>_BASE_URL`."""
    from airweave.providers.catalog import load_defaults

    names = ["CO_API_URL"]
    for name, config in load_defaults()["providers"].items():
        if config.get("api_key_env"):
            names.append(config["api_key_env"])
        names.append(f"{name.upper()}_BASE_URL")
    return names


def configure_provider(monkeypatch, name: str, server: VendorServer | None, key: str | None = None) -> str:
    """Point provider `name` of defaults.yml at `server` (OpenAI kinds at /v1, Cohere at the root); returns the key."""
    from airweave.providers.catalog import load_defaults

    config = load_defaults()["providers"][name]
    key = key or f"sk-test-{name}-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(config["api_key_env"], key)
    if server is not None:
        monkeypatch.setenv(f"{name.upper()}_BASE_URL",
                           server.openai_base_url if config["kind"] == "openai" else server.url)
    return key


@pytest.fixture
def hermetic_providers(monkeypatch, tmp_path):
    """No provider key or endpoint from the developer's environment, no local cross-encoder,
    short client timeouts, and a closed circuit breaker before and after the test."""
    from airweave.providers import cohere_provider, openai_compatible
    from airweave.providers.chain import BREAKER

    for var in provider_env_names():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AIRWEAVE_LOCAL_RERANKER_PATH", str(tmp_path / "no-cross-encoder-here"))
    for module in (openai_compatible, cohere_provider):
        monkeypatch.setattr(module, "TIMEOUT_S", PROVIDER_TIMEOUT_S)
    BREAKER.reset()
    yield
    BREAKER.reset()


@pytest.fixture
def vendor_server():
    """vendor_server(name="openai") -> a started VendorServer; all are stopped after the test, and a
    scripted structured-output reply that broke the request's JSON schema fails the test."""
    servers: list[VendorServer] = []

    def start(name: str = "vendor") -> VendorServer:
        server = VendorServer(name).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    violations = [f"{s.name}: {v}" for s in servers for v in s.schema_violations]
    assert not violations, f"scripted replies broke the requested JSON schema: {violations}"
