"""The extractive, cited answer used when no language model is configured.

Picks the passage sentences closest to the query (cosine similarity of local embeddings,
favouring earlier passages a little), keeps at most `max_sentences`, and cites each with the
1-based number of its passage: "Sentence. [[2]]". Deterministic; no model download.
"""
from __future__ import annotations

import re

import numpy as np

from airweave.providers.local_embeddings import get_local_embedder

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n{2,}")
# A mark like the answer's own citations ("[[3]]"), e.g. a footnote reference in a document: a
# sentence boundary, never quoted, or it would read as a citation of another result.
CITATION_LIKE = re.compile(r"\s*\[\[\d+\]\]\s*")
_MIN_CHARS = 25


def split_sentences(text: str) -> list[str]:
    """The text's sentences (whitespace collapsed), each a verbatim stretch of `text`; sentences
    shorter than 25 characters, table rows, rules and lead-ins ending in ':' are left out."""
    parts = (" ".join(p.split()) for p in _SENTENCE.split(CITATION_LIKE.sub("\n\n", text)))
    return [p for p in parts if len(p) >= _MIN_CHARS and not p.startswith(("---", "|")) and not p.endswith(":")]


def extractive_answer(query: str, passages: list[str], *, max_sentences: int = 3, max_passages: int = 8) -> str:
    """An answer made of the passages' own sentences, each followed by its citation `[[N]]`.

    `passages` are the results' texts in rank order (N is the position + 1). Returns "" when
    no passage has a usable sentence.
    """
    candidates: list[tuple[int, str]] = []
    for number, passage in enumerate(passages[:max_passages], start=1):
        candidates.extend((number, s) for s in split_sentences(passage)[:15])
    if not candidates:
        return ""
    embedder = get_local_embedder()
    vectors = embedder.embed([query] + [s for _, s in candidates])
    scores = vectors[1:] @ vectors[0]
    rank_prior = np.array([0.02 * (number - 1) for number, _ in candidates])
    order = np.argsort(-(scores - rank_prior))
    chosen, seen = [], set()
    for i in order:
        number, sentence = candidates[int(i)]
        if sentence.lower() in seen:
            continue
        seen.add(sentence.lower())
        chosen.append((number, sentence))
        if len(chosen) >= max_sentences:
            break
    return " ".join(f"{sentence} [[{number}]]" for number, sentence in chosen)
