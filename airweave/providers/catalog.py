"""Reads `defaults.yml`: search defaults, embedding models and operation chains."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

DEFAULTS_PATH = Path(__file__).with_name("defaults.yml")

# pgvector's HNSW index takes at most 2,000 dimensions of `vector`; above that we index a
# `halfvec` cast (up to 4,000). Source: pgvector README, "Indexing".
HNSW_MAX_VECTOR_DIMS = 2000


@dataclass(frozen=True)
class EmbeddingModel:
    """An embedding model entry: `name` is "<provider>/<model>", `dimensions` the vector size."""

    name: str
    provider: str
    model: str
    dimensions: int
    max_tokens: int


@lru_cache(maxsize=1)
def load_defaults() -> dict:
    """The parsed defaults.yml (a dict). Raises yaml.YAMLError on a malformed file."""
    with open(DEFAULTS_PATH, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def search_defaults() -> dict:
    return dict(load_defaults()["search_defaults"])


def embedding_models() -> dict[str, EmbeddingModel]:
    return {
        name: EmbeddingModel(name=name, provider=m["provider"], model=m["model"],
                             dimensions=int(m["dimensions"]), max_tokens=int(m["max_tokens"]))
        for name, m in load_defaults()["embedding_models"].items()
    }


def embedding_model(name: str) -> EmbeddingModel:
    """The model called `name`. Raises KeyError naming the known models."""
    models = embedding_models()
    if name not in models:
        raise KeyError(f"unknown embedding model '{name}'; known: {', '.join(sorted(models))}")
    return models[name]


def indexed_dimensions() -> list[int]:
    """The vector sizes that have an HNSW index (one per distinct model dimension)."""
    return sorted({m.dimensions for m in embedding_models().values()})


def provider_keys_present(environ=None) -> dict[str, bool]:
    """{provider: whether its API key variable is set} for every provider of defaults.yml that
    takes a key (the local provider needs none; key-optional endpoints count when their base URL
    or key is set). Reads the environment only."""
    import os

    environ = os.environ if environ is None else environ
    present = {}
    for name, config in load_defaults()["providers"].items():
        key_env = config.get("api_key_env")
        if not key_env:
            continue
        found = bool(environ.get(key_env))
        if config.get("key_optional"):
            found = found or bool(environ.get(f"{name.upper()}_BASE_URL"))
        present[name] = found
    return present
