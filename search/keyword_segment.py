"""The keyword leg over a collection's keyword segment (airweave/collections/keyword_segments.py):
each query term's postings read as packed arrays and scored with numpy.

BM25 is computed exactly as the SQL plans do, Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)),
in float64, with today's N, avgdl and df (the caller's statistics), so the scores are the
exhaustive plan's. The postings of a term are summed per chunk ordinal with `numpy.bincount`;
the best ordinals are then looked up in `collections_keyword_doc` best first, in batches, each
checked against its chunk row when the caller has a filter or an access condition: the look-up
drops chunks deleted since the build, and those a filter or the access rule excludes. Chunks
written since the build are not in the segment: the caller scores them from their posting rows
(search.retrieval.keyword_leg).
"""
from __future__ import annotations

import math

import numpy as np
import psycopg

_ORDINALS = ("SELECT d.ord, d.chunk_id, d.entity_id FROM collections_keyword_doc d "
             "WHERE d.collection_id = %s AND d.ord = ANY(%s)")
_TERMS = """SELECT term, ords, tfs, dls FROM collections_keyword_segment_term
            WHERE collection_id = %s AND term = ANY(%s)"""


def segment_scores(cursor, collection_id, terms: list[str], idf: list[float], avgdl: float,
                   k1: float, b: float) -> np.ndarray:
    """BM25 score of every ordinal of the segment for the query terms: float64 array indexed by
    ordinal (collections_keyword_doc; 0 where a chunk holds none of the terms). `cursor` is a
    Django cursor; the arrays are read on its connection, in its transaction, in PostgreSQL's
    binary format."""
    weights_of = dict(zip(terms, idf))
    with psycopg.Cursor(cursor.cursor.connection) as raw:
        raw.execute(_TERMS, [collection_id, terms], binary=True)
        rows = raw.fetchall()
    total = sum(len(packed_ords) // 4 for _, packed_ords, _, _ in rows)
    ords = np.empty(total, dtype=np.intp)
    weights = np.empty(total, dtype=np.float64)
    at = 0
    for term, packed_ords, packed_tfs, packed_dls in rows:
        n = len(packed_ords) // 4
        ords[at:at + n] = np.frombuffer(packed_ords, dtype=">i4")
        tf = np.frombuffer(packed_tfs, dtype=">i2").astype(np.float64)
        norm = np.frombuffer(packed_dls, dtype=">i2").astype(np.float64)
        norm *= b
        norm /= avgdl
        norm += 1 - b
        norm *= k1
        norm += tf  # tf + k1·(1 − b + b·dl/avgdl), in the SQL plans' order of operations
        out = weights[at:at + n]
        np.multiply(tf, weights_of[term], out=out)
        out *= k1 + 1
        out /= norm
        at += n
    return np.bincount(ords, weights=weights) if total else np.zeros(0)


def segment_top(cursor, collection_id, scores: np.ndarray, depth: int, where: str | None = None,
                params: list = (), share: float = 1.0) -> list[tuple]:
    """The `depth` best chunks of `scores` (from segment_scores) that still exist and pass `where`
    (SQL over chunks `c` with its `params`; None: no filter), best first: [(chunk id, entity id, score)].

    Candidates are looked up best first; the first batch is sized for `share`, the estimated
    fraction of chunks that pass (1 unfiltered), and each next one is four times larger, until
    `depth` passed or no scored ordinal is left.
    """
    wanted = first_batch_size(depth, share)
    looked_up = np.zeros(len(scores), dtype=bool)
    found: list[tuple] = []
    while len(found) < depth:
        best = _best_first(scores, wanted)
        batch = best[~looked_up[best]]  # ties at a cut may order differently from one round to the next
        if not len(batch):
            break
        looked_up[batch] = True
        if where is None:
            cursor.execute(_ORDINALS, [collection_id, batch.tolist()])
        else:
            # One primary-key probe per candidate (OFFSET 0 keeps the planner from turning it into a
            # join that reads every chunk the filter keeps).
            cursor.execute(f"{_ORDINALS} AND EXISTS (SELECT 1 FROM (SELECT 1 FROM collections_chunk c "
                           f"WHERE c.id = d.chunk_id AND {where} OFFSET 0) passes)",
                           [collection_id, batch.tolist(), *params])
        passed = {row[0]: row[1:] for row in cursor.fetchall()}
        found += [(*passed[o], float(scores[o])) for o in batch.tolist() if o in passed]
        wanted *= 4
    found.sort(key=lambda hit: -hit[2])
    return found[:depth]


def first_batch_size(depth: int, share: float) -> int:
    """Candidates looked up first for a page of `depth` when a share `share` of the chunks passes:
    enough for `depth` to pass at that share, with half again as many under a filter."""
    return math.ceil((depth + 8) / max(share, 1e-3) * (1 if share >= 1 else 1.5))


def _best_first(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the `k` largest positive `scores` (all positive ones when fewer), largest first.

    Any subset's k-th largest is at most the whole array's, so the k-th largest of a strided
    sample is a cut that keeps at least k: sorting what passes it costs far less than a
    partition of the whole array (a million scores at a million chunks)."""
    cut = 0.0
    stride = len(scores) // 65536
    if stride > 1:
        sample = scores[::stride]
        if np.count_nonzero(sample) >= k:
            cut = np.partition(sample, len(sample) - k)[len(sample) - k]
    kept = np.flatnonzero(scores >= cut) if cut > 0 else np.flatnonzero(scores)
    if len(kept) > k:
        kept = kept[np.argpartition(-scores[kept], k - 1)[:k]]
    return kept[np.argsort(-scores[kept], kind="stable")]
