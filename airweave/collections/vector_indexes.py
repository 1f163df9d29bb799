"""One partial HNSW expression index per embedding dimension of defaults.yml (docs/architecture.md, Storage).

Chunks of every dimension share the `embedding` column; the index for dimension D covers
`(embedding::vector(D))` where `dims = D` (a `halfvec(D)` cast above 2,000 dimensions, the
limit of pgvector's HNSW on `vector`). Run after every migrate, so adding a model to
defaults.yml adds its index.
"""
from __future__ import annotations

from django.db import connection

from airweave.providers.catalog import HNSW_MAX_VECTOR_DIMS, indexed_dimensions


def vector_cast(dims: int) -> str:
    """The SQL type the index for `dims` is built on: "vector(D)" or "halfvec(D)"."""
    return f"halfvec({dims})" if dims > HNSW_MAX_VECTOR_DIMS else f"vector({dims})"


def ensure_vector_indexes(sender=None, using="default", **kwargs) -> None:
    """Create any missing per-dimension HNSW index on collections_chunk."""
    from django.db import connections

    conn = connections[using] if using else connection
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('collections_chunk')")
        if cur.fetchone()[0] is None:
            return
        for dims in indexed_dimensions():
            cast = vector_cast(dims)
            opclass = "halfvec_cosine_ops" if cast.startswith("halfvec") else "vector_cosine_ops"
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_{dims} ON collections_chunk "
                f"USING hnsw ((embedding::{cast}) {opclass}) WITH (m = 16, ef_construction = 64) "
                f"WHERE dims = {dims}"
            )
