"""Writes of the BM25 keyword index (reads are in search/retrieval.py).

Terms are the lexemes of PostgreSQL's `to_tsvector(TEXT_SEARCH_CONFIG, text)`: lower-cased,
stop words removed, Snowball-stemmed. A chunk's length `dl` is its number of term occurrences.
"""
from __future__ import annotations

TEXT_SEARCH_CONFIG = "english"

_SET_LENGTHS = f"""
UPDATE collections_chunk c
SET keyword_length = coalesce((
    SELECT sum(coalesce(array_length(t.positions, 1), 1))
    FROM unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', c.text)) AS t
), 0)
WHERE c.id = ANY(%s::uuid[])
"""

_INSERT_POSTINGS = f"""
INSERT INTO collections_keyword_posting (collection_id, term, chunk_id, tf, dl)
SELECT c.collection_id, t.lexeme, c.id, least(coalesce(array_length(t.positions, 1), 1), 32767), c.keyword_length
FROM collections_chunk c, unnest(to_tsvector('{TEXT_SEARCH_CONFIG}', c.text)) AS t
WHERE c.id = ANY(%s::uuid[])
"""


_ADD_STATS = """
INSERT INTO collections_keyword_stats AS s (collection_id, chunk_count, total_length)
SELECT collection_id, count(*), coalesce(sum(keyword_length), 0)
FROM collections_chunk WHERE id = ANY(%s::uuid[]) GROUP BY collection_id
ON CONFLICT (collection_id) DO UPDATE
SET chunk_count = s.chunk_count + excluded.chunk_count, total_length = s.total_length + excluded.total_length
"""


def index_chunks(cursor, chunk_ids: list) -> None:
    """Compute lengths, postings and collection statistics of freshly inserted chunks (ids: list of UUID).

    Deleted chunks take their postings (ON DELETE CASCADE) and their share of the statistics
    (a trigger, migration 0004) with them.
    """
    if not chunk_ids:
        return
    ids = [str(i) for i in chunk_ids]
    cursor.execute(_SET_LENGTHS, [ids])
    cursor.execute(_INSERT_POSTINGS, [ids])
    cursor.execute(_ADD_STATS, [ids])


_REFRESH_STATS = """
INSERT INTO collections_keyword_stats AS s (collection_id, chunk_count, total_length)
SELECT %s, count(*), coalesce(sum(keyword_length), 0) FROM collections_chunk WHERE collection_id = %s
ON CONFLICT (collection_id) DO UPDATE SET chunk_count = excluded.chunk_count, total_length = excluded.total_length
"""


def keyword_stats_refresh(collection_id) -> None:
    """Recount a collection's BM25 statistics from its chunks (run at the end of each sync job).

    The increments and the delete trigger keep the row exact; this heals any drift, e.g. rows
    written while the statistics table was being created.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_REFRESH_STATS, [collection_id, collection_id])
