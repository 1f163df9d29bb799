"""Builds the client object for a chain entry (see chain.ProviderSpec)."""
from __future__ import annotations

from airweave.providers.chain import ProviderChain, ProviderSpec
from airweave.providers.errors import ProviderError


def build_provider(spec: ProviderSpec):
    """A language model, reranker or local helper for `spec`. Raises ProviderError (not retryable) if unknown."""
    if spec.kind == "openai":
        from airweave.providers.openai_compatible import OpenAICompatibleModel

        return OpenAICompatibleModel(model=spec.model, api_key=spec.api_key, base_url=spec.base_url)
    if spec.kind == "cohere":
        from airweave.providers.cohere_provider import CohereReranker

        return CohereReranker(model=spec.model, api_key=spec.api_key, base_url=spec.base_url)
    if spec.kind == "local" and spec.model == "cross-encoder":
        from airweave.providers.local_reranker import LocalCrossEncoder, local_reranker_path

        return LocalCrossEncoder(local_reranker_path())
    if spec.kind == "local" and spec.model == "extractive":
        return "extractive"
    raise ProviderError(f"unknown provider kind {spec.kind}/{spec.model}", retryable=False)


def chain_for(operation: str) -> ProviderChain:
    """The fallback chain of `operation` (a key of defaults.yml `operations`)."""
    return ProviderChain.for_operation(operation, build_provider)
