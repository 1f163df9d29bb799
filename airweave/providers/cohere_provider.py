"""Cohere through the `cohere` SDK: rerank."""
from __future__ import annotations

import cohere
import httpx
from cohere.core.api_error import ApiError

from airweave.providers.errors import ProviderError

TIMEOUT_S = 15.0


class CohereReranker:
    """`rerank(query, documents, top_n)` → [(index into documents, relevance score)], best first."""

    def __init__(self, *, model: str, api_key: str, base_url: str | None = None, timeout: float | None = None):
        self.model = model
        kwargs = {"api_key": api_key, "timeout": timeout if timeout is not None else TIMEOUT_S, "max_retries": 0}
        if base_url:
            kwargs["base_url"] = base_url
        self.client = cohere.ClientV2(**kwargs)

    def rerank(self, query: str, documents: list[str], top_n: int) -> list[tuple[int, float]]:
        try:
            response = self.client.rerank(model=self.model, query=query, documents=documents, top_n=top_n)
        except httpx.TimeoutException as exc:
            raise ProviderError(f"timeout: {exc}", retryable=True) from exc
        except httpx.TransportError as exc:
            raise ProviderError(f"connection: {exc}", retryable=True) from exc
        except ApiError as exc:
            status = exc.status_code or 0
            raise ProviderError(f"HTTP {status}: {exc.body}", retryable=status == 429 or status >= 500,
                                status=status) from exc
        return [(r.index, float(r.relevance_score)) for r in response.results]
