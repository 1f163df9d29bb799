"""OpenAI and OpenAI-compatible endpoints (Groq, Cerebras, Mistral, Together, Ollama, vLLM) via `openai`."""
from __future__ import annotations

import json
from typing import Iterator

import openai

from airweave.providers.errors import ProviderError

TIMEOUT_S = 20.0


class OpenAICompatibleModel:
    """A chat model behind an OpenAI-compatible API. The SDK's own retries are off: the chain falls back."""

    def __init__(self, *, model: str, api_key: str | None, base_url: str, timeout: float | None = None):
        self.model = model
        self.client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                    timeout=timeout if timeout is not None else TIMEOUT_S, max_retries=0)

    def complete_json(self, *, system: str, user: str, schema: dict, name: str) -> dict:
        """Structured output: the reply parsed as JSON following `schema` (JSON Schema, strict)."""
        with _mapped_errors():
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}},
                temperature=0,
            )
        content = response.choices[0].message.content or ""
        try:
            return json.loads(content)
        except json.JSONDecodeError:
            raise ProviderError(f"{self.model} returned invalid JSON", retryable=True) from None

    def complete_tools(self, *, messages: list[dict], tools: list[dict]) -> dict:
        """One assistant turn with native tool calling.

        `messages` are chat messages (system, user, assistant with `tool_calls`, tool results);
        `tools` are function definitions `{name, description, parameters (JSON Schema)}`.
        Returns `{"content": str, "tool_calls": [{"id", "name", "arguments"}]}` where `arguments`
        is the JSON string the model wrote (parsed by the caller, which reports bad JSON back to
        the model). Raises ProviderError.
        """
        with _mapped_errors():
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, temperature=0, tool_choice="auto",
                tools=[{"type": "function", "function": tool} for tool in tools],
            )
        message = response.choices[0].message
        calls = [{"id": call.id, "name": call.function.name, "arguments": call.function.arguments or "{}"}
                 for call in message.tool_calls or [] if getattr(call, "function", None)]
        return {"content": message.content or "", "tool_calls": calls}

    def stream_text(self, *, system: str, user: str) -> Iterator[str]:
        """Stream the reply's text deltas."""
        with _mapped_errors():
            stream = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                stream=True, temperature=0,
            )
            for event in stream:
                if event.choices and event.choices[0].delta and event.choices[0].delta.content:
                    yield event.choices[0].delta.content


class _mapped_errors:
    """Turns SDK exceptions into ProviderError: 429, 5xx, timeouts and connection errors are retryable."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or isinstance(exc, ProviderError):
            return False
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
            raise ProviderError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            raise ProviderError(f"HTTP {status}: {exc.message}", retryable=status == 429 or status >= 500,
                                status=status) from exc
        if isinstance(exc, openai.APIError):  # e.g. an error frame inside a stream after the 200
            raise ProviderError(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        return False


class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible endpoint for collections pinned to such a model.

    `embed(texts)` → float32 array (n, dimensions), L2-normalised. Chunks are still measured with
    the local MiniLM tokenizer (`tokenizer`): remote tokenizers cannot be fetched here, and the
    chunk size (AIRWEAVE_CHUNK_TOKENS) sits far below these models' limits either way.
    """

    BATCH = 256

    def __init__(self, *, model: str, dimensions: int, max_tokens: int, api_key: str | None, base_url: str,
                 timeout: float | None = None):
        self.model = model
        self.dimensions = dimensions
        self.max_tokens = max_tokens
        self.calls = 0
        self.client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                    timeout=timeout if timeout is not None else TIMEOUT_S, max_retries=0)

    @property
    def tokenizer(self):
        from airweave.providers.local_embeddings import get_local_embedder

        return get_local_embedder().tokenizer

    def embed(self, texts: list[str]):
        import numpy as np

        self.calls += 1
        vectors = []
        for start in range(0, len(texts), self.BATCH):
            with _mapped_errors():
                response = self.client.embeddings.create(model=self.model, input=texts[start:start + self.BATCH],
                                                         dimensions=self.dimensions)
            vectors.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        array = np.asarray(vectors, dtype=np.float32)
        if array.shape != (len(texts), self.dimensions):
            raise ProviderError(f"{self.model} returned vectors of shape {array.shape}", retryable=False)
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        return array / np.where(norms == 0, 1, norms)

    def embed_queries(self, texts: list[str]):
        """OpenAI's embedding models embed queries and documents alike."""
        return self.embed(texts)
