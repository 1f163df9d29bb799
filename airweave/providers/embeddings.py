"""Embedding providers by model name ("<provider>/<model>" entries of defaults.yml)."""
from __future__ import annotations

from airweave.providers.catalog import embedding_model
from airweave.providers.local_embeddings import get_local_embedder


class ProviderUnavailable(Exception):
    """The provider of a model cannot answer here (no key, not installed)."""


def get_embedder(model_name: str, batch_size: int = 64):
    """The embedder for a collection's pinned model.

    Returns an object with `embed(texts) -> ndarray (n, dims)`, `tokenizer`, `max_tokens`.
    Raises KeyError for an unknown model and ProviderUnavailable for a remote provider
    that this build cannot reach yet.
    """
    model = embedding_model(model_name)
    if model.provider == "local":
        return get_local_embedder(model.model, batch_size)
    raise ProviderUnavailable(f"embedding provider '{model.provider}' is not configured on this server")
