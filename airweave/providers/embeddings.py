"""Embedding providers by model name ("<provider>/<model>" entries of defaults.yml)."""
from __future__ import annotations

from airweave.providers.catalog import embedding_model
from airweave.providers.chain import provider_spec
from airweave.providers.local_embeddings import get_local_embedder


class ProviderUnavailable(Exception):
    """The provider of a collection's embedding model cannot answer here (no key, no endpoint)."""


def get_embedder(model_name: str, batch_size: int = 64):
    """The embedder for a collection's pinned model.

    Returns an object with `embed(texts)` for documents and `embed_queries(texts)` for queries
    (both → float32 ndarray (n, dims), L2-normalised), `tokenizer`, `max_tokens`.
    Local models load once per process; OpenAI-compatible and Cohere models call their endpoint (key and
    base URL from the environment, as for every provider). Raises KeyError for an unknown model
    and ProviderUnavailable when the model's provider is not configured.
    """
    model = embedding_model(model_name)
    if model.provider == "local":
        return get_local_embedder(model.model, batch_size)
    spec = provider_spec(model.name)
    reason = spec.unavailable_reason()
    if reason:
        raise ProviderUnavailable(f"embedding model {model.name}: {reason}")
    if spec.kind == "openai":
        from airweave.providers.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(model=model.model, dimensions=model.dimensions, max_tokens=model.max_tokens,
                                        api_key=spec.api_key, base_url=spec.base_url)
    if spec.kind == "cohere":
        from airweave.providers.cohere_provider import CohereEmbedder

        return CohereEmbedder(model=model.model, dimensions=model.dimensions, max_tokens=model.max_tokens,
                              api_key=spec.api_key, base_url=spec.base_url)
    raise ProviderUnavailable(f"embedding model {model.name}: provider kind '{spec.kind}' has no embedding client yet")
