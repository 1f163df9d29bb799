"""The keyword leg over a collection's keyword segment (airweave/collections/keyword_segments.py):
each query term's postings read as packed arrays and scored with numpy.

BM25 is computed exactly as the SQL plans do, Σ idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)),
in float64, with today's N, avgdl and df (the caller's statistics), so the scores are the
exhaustive plan's. The postings of a term are summed per chunk ordinal with `numpy.bincount`;
the best ordinals are then looked up in the chunk table best first, in batches, with the caller's
filter and access condition: the look-up drops chunks deleted since the build, and those a
filter or the access rule excludes. Chunks written since the build are not in the segment: the
caller scores them from their posting rows (search.retrieval.keyword_leg).
"""
from __future__ import annotations

import math

import numpy as np
import psycopg

_ORDINALS = "SELECT d.ord, d.chunk_id, d.entity_id FROM collections_keyword_doc d WHERE d.collection_id = %s AND d.ord = ANY(%s)"
_TERMS = """SELECT term, ords, tfs, dls FROM collections_keyword_segment_term
            WHERE collection_id = %s AND term = ANY(%s)"""


def segment_scores(cursor, collection_id, terms: list[str], idf: list[float], avgdl: float,
                   k1: float, b: float) -> np.ndarray:
    """BM25 score of every ordinal of the segment for the query terms: float64 array indexed by
    ordinal (collections_keyword_doc; 0 where a chunk holds none of the terms). `cursor` is a Django cursor; the arrays
    are read on its connection, in its transaction, in PostgreSQL's binary format."""
    weights_of = dict(zip(terms, idf))
    ords, weights = [], []
    with psycopg.Cursor(cursor.cursor.connection) as raw:
        raw.execute(_TERMS, [collection_id, terms], binary=True)
        for term, packed_ords, packed_tfs, packed_dls in raw:
            tf = np.frombuffer(packed_tfs, dtype=">i2").astype(np.float64)
            dl = np.frombuffer(packed_dls, dtype=">i2").astype(np.float64)
            ords.append(np.frombuffer(packed_ords, dtype=">i4"))
            weights.append(weights_of[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))
    if not ords:
        return np.zeros(0)
    return np.bincount(np.concatenate(ords).astype(np.intp), weights=np.concatenate(weights))


def segment_top(cursor, collection_id, scores: np.ndarray, depth: int, where: str | None = None,
                params: list = (), share: float = 1.0) -> list[tuple]:
    """The `depth` best chunks of `scores` (from segment_scores) that still exist and pass `where`
    (SQL over chunks `c` with its `params`; None: no filter), best first: [(chunk id, entity id, score)].

    Candidates are looked up best first; the first batch is sized for `share`, the estimated
    fraction of chunks that pass (1 unfiltered), and each next batch is four times larger, until
    `depth` passed or no scored ordinal is left.
    """
    candidates = np.flatnonzero(scores)
    values = scores[candidates]
    looked_up = np.zeros(len(candidates), dtype=bool)
    found: list[tuple] = []
    end = min(len(candidates), math.ceil((depth + 8) / max(share, 1e-3) * (1 if share >= 1 else 1.5)))
    while len(found) < depth and not looked_up.all():
        best = _best_first(values, end)
        best = best[~looked_up[best]]  # ties at a cut may order differently from one round to the next
        looked_up[best] = True
        batch = candidates[best]
        if where is None:
            cursor.execute(_ORDINALS, [collection_id, batch.tolist()])
        else:
            cursor.execute(f"{_ORDINALS} AND d.chunk_id IN (SELECT c.id FROM collections_chunk c WHERE {where})",
                           [collection_id, batch.tolist(), *params])
        passed = {row[0]: row[1:] for row in cursor.fetchall()}
        found += [(*passed[o], float(scores[o])) for o in batch.tolist() if o in passed]
        end = min(len(candidates), end * 4)
    found.sort(key=lambda hit: -hit[2])
    return found[:depth]


def _best_first(values: np.ndarray, end: int) -> np.ndarray:
    """Indices of the `end` largest `values`, largest first."""
    if end < len(values):
        top = np.argpartition(-values, end - 1)[:end]
    else:
        top = np.arange(len(values))
    return top[np.argsort(-values[top], kind="stable")]
