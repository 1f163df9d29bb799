"""Writes of the keyword segments (reads are in search/keyword_segment.py; docs/search.md,
"The keyword leg at scale").

A segment packs, for every term of a collection, the postings of its chunks with ordinal
<= max_ord (collections_keyword_doc) into one row of three arrays, so that a query reads a term's
whole list as a few kilobytes to megabytes instead of one row per posting. Chunks written after
the build are the segment's *delta* (ordinal > max_ord) and are scored from their posting
rows; chunks deleted after it still have their postings in the arrays and are dropped when the
query looks them up. The segment is rebuilt when either grows past its limit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction

_LOCK = "SELECT pg_advisory_xact_lock(hashtext('keyword-segment:' || %s::text))"

# The three arrays are fed the same rows in the same order: the aggregates of one group run
# over its rows together.
_BUILD_TERMS = """
INSERT INTO collections_keyword_segment_term (collection_id, term, postings, ords, tfs, dls)
SELECT %(collection)s, p.term, count(*), string_agg(int4send(d.ord), ''::bytea),
       string_agg(int2send(p.tf), ''::bytea), string_agg(int2send(least(p.dl, 32767)::int2), ''::bytea)
FROM collections_keyword_posting p
JOIN collections_keyword_doc d ON d.chunk_id = p.chunk_id AND d.collection_id = %(collection)s AND d.ord <= %(max_ord)s
WHERE p.collection_id = %(collection)s
GROUP BY p.term
"""


@dataclass(frozen=True)
class SegmentState:
    """What a collection's keyword index holds against its segment (counts of chunks)."""

    chunks: int  # live chunks in the collection
    delta: int  # chunks written after the segment was built (all of them without a segment)
    deleted: int  # chunks of the segment deleted since it was built
    has_segment: bool


def keyword_segment_state(collection_id) -> SegmentState:
    """Count the collection's chunks against its segment (two index range counts)."""
    with connection.cursor() as cur:
        cur.execute("""
            SELECT s.chunk_count, g.max_ord, g.chunk_count,
                   (SELECT count(*) FROM collections_keyword_doc d
                    WHERE d.collection_id = s.collection_id AND d.ord > coalesce(g.max_ord, 0))
            FROM collections_keyword_stats s LEFT JOIN collections_keyword_segment g USING (collection_id)
            WHERE s.collection_id = %s""", [collection_id])
        row = cur.fetchone()
    if row is None:
        return SegmentState(0, 0, 0, False)
    chunks, max_ord, built_chunks, delta = row
    if max_ord is None:
        return SegmentState(chunks, delta, 0, False)
    return SegmentState(chunks, delta, max(0, built_chunks - (chunks - delta)), True)


def keyword_segment_refresh(collection_id, *, force: bool = False) -> dict | None:
    """Rebuild the collection's keyword segment when it is due; run at the end of each sync job.

    Due: the collection has at least AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS chunks and either has no
    segment, or more than AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA chunks were written since its build,
    or over a tenth of the chunks it was built with were deleted since. Below the minimum a
    segment is dropped (the row-posting plans are fast there). `force` rebuilds whatever the counts
    say. The build is one transaction (searches read the old segment until it commits); concurrent
    refreshes of one collection queue on a lock and the later one finds it done.
    Returns {"chunks", "terms", "seconds"} when it built one, else None.
    """
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(_LOCK, [str(collection_id)])
        state = keyword_segment_state(collection_id)
        if state.chunks < settings.AIRWEAVE_KEYWORD_SEGMENT_MIN_CHUNKS and not force:
            if state.has_segment:
                keyword_segment_drop(collection_id)
            return None
        due = (not state.has_segment or state.delta > settings.AIRWEAVE_KEYWORD_SEGMENT_MAX_DELTA
               or state.deleted * 9 > state.chunks - state.delta)  # deleted > a tenth of what it was built with
        if not (due or force):
            return None
        chunks, terms = _build(cur, collection_id)
    return {"chunks": chunks, "terms": terms, "seconds": round(time.perf_counter() - started, 2)}


def _build(cur, collection_id) -> tuple[int, int]:
    """Replace the segment inside the caller's locked transaction; (chunks, term rows)."""
    cur.execute("SET LOCAL work_mem = '256MB'")
    cur.execute("SELECT next_ord - 1 FROM collections_keyword_stats WHERE collection_id = %s", [collection_id])
    row = cur.fetchone()
    max_ord = row[0] if row else 0
    cur.execute("DELETE FROM collections_keyword_segment WHERE collection_id = %s", [collection_id])
    cur.execute("""INSERT INTO collections_keyword_segment (collection_id, max_ord, chunk_count)
                   SELECT %s, %s, count(*) FROM collections_keyword_doc WHERE collection_id = %s AND ord <= %s
                   RETURNING chunk_count""", [collection_id, max_ord, collection_id, max_ord])
    chunks = cur.fetchone()[0]
    cur.execute(_BUILD_TERMS, {"collection": collection_id, "max_ord": max_ord})
    return chunks, cur.rowcount


def keyword_segment_drop(collection_id) -> None:
    """Delete the collection's segment (its term rows go with it)."""
    with connection.cursor() as cur:
        cur.execute("DELETE FROM collections_keyword_segment WHERE collection_id = %s", [collection_id])
