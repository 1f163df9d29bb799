"""Writes of the BM25 keyword index (reads are in search/retrieval.py).

Terms are the lexemes of PostgreSQL's `to_tsvector(TEXT_SEARCH_CONFIG, text)`: lower-cased,
stop words removed, Snowball-stemmed. A chunk's length `dl` is its number of term occurrences.
"""
from __future__ import annotations

TEXT_SEARCH_CONFIG = "english"
# BM25 parameters (Robertson & Zaragoza 2009; Lucene's idf variant, as in bm25s). Chosen on the
# SciFact train split by `bench/beir.py --tune` (grid k1 0.9-1.8 x b 0.5-0.9; best k1 = 1.2, b = 0.5).
# Postings store their term weight with these (migration 0013 backfilled with the same numbers).
BM25_K1 = 1.2
BM25_B = 0.5

_SET_LENGTHS = f"""
UPDATE collections_chunk c
SET keyword_length = coalesce((
    SELECT sum(coalesce(array_length(t.positions, 1), 1))
    FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', c.text)) AS t
), 0)
WHERE c.id = ANY(%s::uuid[])
"""

# Ordinals `first`, `first` + 1, ... for the batch's chunks of one collection (migration 0014).
_ADD_DOCS = """
INSERT INTO collections_keyword_doc (collection_id, ord, chunk_id, entity_id)
SELECT collection_id, %(first)s::int - 1 + row_number() OVER (ORDER BY id), id, entity_id
FROM collections_chunk WHERE id = ANY(%(ids)s::uuid[]) AND collection_id = %(collection)s
"""

_BATCH_COLLECTIONS = """
SELECT collection_id, count(*) FROM collections_chunk WHERE id = ANY(%s::uuid[])
GROUP BY collection_id ORDER BY collection_id
"""

# Reserves `n` ordinals (and locks the statistics row, which every writer of a collection locks
# first); returns the first one.
_RESERVE_ORDS = """
INSERT INTO collections_keyword_stats AS s (collection_id, chunk_count, total_length, next_ord)
VALUES (%(collection)s, 0, 0, 1 + %(n)s)
ON CONFLICT (collection_id) DO UPDATE SET next_ord = s.next_ord + %(n)s
RETURNING next_ord - %(n)s
"""

# The statistics row is locked first (see the delete trigger, migration 0013); the first write of a
# collection fixes its impact_avgdl.
_ADD_STATS = """
INSERT INTO collections_keyword_stats AS s (collection_id, chunk_count, total_length, impact_avgdl)
SELECT collection_id, count(*), coalesce(sum(keyword_length), 0),
       greatest(coalesce(sum(keyword_length), 0)::float8 / count(*), 1)
FROM collections_chunk WHERE id = ANY(%s::uuid[]) GROUP BY collection_id
ON CONFLICT (collection_id) DO UPDATE
SET chunk_count = s.chunk_count + excluded.chunk_count, total_length = s.total_length + excluded.total_length,
    impact_avgdl = coalesce(s.impact_avgdl, excluded.impact_avgdl)
"""

_INSERT_POSTINGS = f"""
INSERT INTO collections_keyword_posting (collection_id, term, chunk_id, tf, dl, impact)
SELECT c.collection_id, t.lexeme, c.id, p.tf, c.keyword_length,
       p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * c.keyword_length / s.impact_avgdl))
FROM collections_chunk c
JOIN collections_keyword_stats s ON s.collection_id = c.collection_id
CROSS JOIN LATERAL unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', c.text)) AS t
CROSS JOIN LATERAL (SELECT least(coalesce(array_length(t.positions, 1), 1), 32767)::float8 AS tf) p
WHERE c.id = ANY(%(ids)s::uuid[])
"""

# Term rows in one order (collection, term): concurrent writers queue instead of deadlocking.
_ADD_TERMS = f"""
INSERT INTO collections_keyword_term AS t (collection_id, term, df)
SELECT c.collection_id, l.lexeme, count(*)
FROM collections_chunk c, unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', c.text)) AS l
WHERE c.id = ANY(%s::uuid[])
GROUP BY c.collection_id, l.lexeme ORDER BY c.collection_id, l.lexeme
ON CONFLICT (collection_id, term) DO UPDATE SET df = t.df + excluded.df
"""


def index_chunks(cursor, chunk_ids: list) -> None:
    """Compute ordinals (collections_keyword_doc), lengths, postings (with their impacts),
    document frequencies and collection statistics of freshly inserted chunks (ids: list of UUID).

    Deleted chunks take their ordinals and postings (ON DELETE CASCADE), their share of the statistics and
    their terms' document frequencies (the chunk delete trigger, migrations 0004 and 0013) with them.
    """
    if not chunk_ids:
        return
    ids = [str(i) for i in chunk_ids]
    cursor.execute(_BATCH_COLLECTIONS, [ids])
    for collection_id, n in cursor.fetchall():
        cursor.execute(_RESERVE_ORDS, {"collection": collection_id, "n": n})
        first = cursor.fetchone()[0]
        cursor.execute(_ADD_DOCS, {"first": first, "ids": ids, "collection": collection_id})
    cursor.execute(_SET_LENGTHS, [ids])
    cursor.execute(_ADD_STATS, [ids])
    cursor.execute(_INSERT_POSTINGS, {"ids": ids, "k1": BM25_K1, "b": BM25_B})
    cursor.execute(_ADD_TERMS, [ids])


_REFRESH_STATS = """
INSERT INTO collections_keyword_stats AS s (collection_id, chunk_count, total_length)
SELECT %s, count(*), coalesce(sum(keyword_length), 0) FROM collections_chunk WHERE collection_id = %s
ON CONFLICT (collection_id) DO UPDATE SET chunk_count = excluded.chunk_count, total_length = excluded.total_length
"""
_PRUNE_TERMS = "DELETE FROM collections_keyword_term WHERE collection_id = %s AND df <= 0"


def keyword_stats_refresh(collection_id) -> None:
    """Recount a collection's BM25 statistics from its chunks (run at the end of each sync job).

    The increments and the delete trigger keep the row exact; this heals any drift, e.g. rows
    written while the statistics table was being created, and drops the terms no chunk holds any more.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_REFRESH_STATS, [collection_id, collection_id])
        cursor.execute(_PRUNE_TERMS, [collection_id])
