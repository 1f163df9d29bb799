"""The vector leg: exact scan for small collections, the per-dimension HNSW index above the threshold."""
from django.db import connection

from search.instant import InstantSearchRequest, search_instant

FILES = {f"topic{i}.md": text for i, text in enumerate([
    "Sourdough bread needs a starter, flour, water and salt, and a long slow rise.",
    "The marathon training plan builds weekly mileage before a taper in the final weeks.",
    "Kubernetes schedules containers onto nodes and restarts them when they fail.",
    "Photosynthesis turns sunlight, water and carbon dioxide into sugar and oxygen.",
    "The quarterly budget review compares planned spending against actual costs.",
])}


def _names(collection, query):
    response = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query=query, retrieval_strategy="semantic", limit=3))
    return [r["name"] for r in response.results]


def test_hnsw_path_matches_exact_scan(make_collection, sync_folder, write_files, settings):
    collection = make_collection()
    sync_folder(collection, write_files(FILES))
    settings.AIRWEAVE_EXACT_SCAN_MAX_CHUNKS = 10_000
    exact = _names(collection, "how do plants make sugar from light")
    settings.AIRWEAVE_EXACT_SCAN_MAX_CHUNKS = 0
    approximate = _names(collection, "how do plants make sugar from light")
    assert exact[0] == approximate[0] == "topic3.md"


def test_hnsw_index_exists_per_dimension_and_serves_the_query(db):
    with connection.cursor() as cur:
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'collections_chunk' "
                    "AND indexname LIKE 'chunk_embedding_hnsw_%%'")
        indexes = dict(cur.fetchall())
        assert "WHERE (dims = 384)" in indexes["chunk_embedding_hnsw_384"]
        assert "halfvec(3072)" in indexes["chunk_embedding_hnsw_3072"]
        cur.execute("SET enable_seqscan = off")
        cur.execute("EXPLAIN SELECT id FROM collections_chunk c WHERE c.dims = 384 "
                    "ORDER BY (c.embedding::vector(384) <=> %s::vector(384)) LIMIT 10", ["[" + ",".join(["0.1"] * 384) + "]"])
        plan = "\n".join(r[0] for r in cur.fetchall())
    assert "chunk_embedding_hnsw_384" in plan
