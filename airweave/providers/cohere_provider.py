"""Cohere through the `cohere` SDK: rerank and embeddings."""
from __future__ import annotations

from contextlib import contextmanager

import cohere
import httpx
from cohere.core.api_error import ApiError

from airweave.providers.errors import ProviderError

TIMEOUT_S = 15.0


@contextmanager
def _mapped_errors():
    """Cohere/httpx failures → ProviderError; 429, 5xx, timeouts and connection errors are retryable."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ProviderError(f"timeout: {exc}", retryable=True) from exc
    except httpx.TransportError as exc:
        raise ProviderError(f"connection: {exc}", retryable=True) from exc
    except ApiError as exc:
        status = exc.status_code or 0
        raise ProviderError(f"HTTP {status}: {exc.body}", retryable=status == 429 or status >= 500,
                            status=status) from exc


def _client(api_key: str, base_url: str | None, timeout: float | None) -> cohere.ClientV2:
    kwargs = {"api_key": api_key, "timeout": timeout if timeout is not None else TIMEOUT_S, "max_retries": 0}
    if base_url:
        kwargs["base_url"] = base_url
    return cohere.ClientV2(**kwargs)


class CohereReranker:
    """`rerank(query, documents, top_n)` → [(index into documents, relevance score)], best first."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None = None, timeout: float | None = None):
        self.model = model
        self.client = _client(api_key, base_url, timeout)

    def rerank(self, query: str, documents: list[str], top_n: int) -> list[tuple[int, float]]:
        with _mapped_errors():
            response = self.client.rerank(model=self.model, query=query, documents=documents, top_n=top_n)
        return [(r.index, float(r.relevance_score)) for r in response.results]


class CohereEmbedder:
    """Embeddings from Cohere's v2 `/embed` for collections pinned to a Cohere model.

    `embed(texts)` embeds documents (`input_type=search_document`), `embed_queries(texts)` queries
    (`search_query`): Cohere's v3 models embed the two differently and require the type. Returns a
    float32 array (n, dimensions), L2-normalised. At most 96 texts go in one request (Cohere's
    limit). Chunks are measured with the local MiniLM tokenizer, as for OpenAI models.
    Raises ProviderError (retryable for 429, 5xx, timeouts).
    """

    BATCH = 96

    def __init__(self, *, model: str, dimensions: int, max_tokens: int, api_key: str, base_url: str | None = None,
                 timeout: float | None = None):
        self.model = model
        self.dimensions = dimensions
        self.max_tokens = max_tokens
        self.calls = 0
        self.client = _client(api_key, base_url, timeout)

    @property
    def tokenizer(self):
        from airweave.providers.local_embeddings import get_local_embedder

        return get_local_embedder().tokenizer

    def embed(self, texts: list[str]):
        return self._embed(texts, "search_document")

    def embed_queries(self, texts: list[str]):
        return self._embed(texts, "search_query")

    def _embed(self, texts: list[str], input_type: str):
        import numpy as np

        self.calls += 1
        vectors = []
        for start in range(0, len(texts), self.BATCH):
            with _mapped_errors():
                response = self.client.embed(model=self.model, input_type=input_type, texts=texts[start:start + self.BATCH],
                                             embedding_types=["float"])
            vectors.extend(response.embeddings.float_ or [])
        array = np.asarray(vectors, dtype=np.float32)
        if array.shape != (len(texts), self.dimensions):
            raise ProviderError(f"{self.model} returned vectors of shape {array.shape}", retryable=False)
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        return array / np.where(norms == 0, 1, norms)
