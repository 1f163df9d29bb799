"""Token-aware chunking with overlap, measured in the embedding model's own tokens.

The text is tokenized once (fast tokenizer, with character offsets). Windows hold at most
`max_tokens - 2` tokens (room for the model's [CLS]/[SEP]), start `overlap` tokens before the
previous window's end, and end, where possible, at a paragraph, line or sentence boundary found
in the last quarter of the window, so chunks rarely cut a sentence in half.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_BOUNDARIES = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"[.!?。]\s"), re.compile(r"[;:,]\s"))


@dataclass(frozen=True)
class TextChunk:
    text: str
    start: int  # character offset in the source text
    end: int


def chunk_text(text: str, tokenizer, *, max_tokens: int = 256, overlap: int = 32) -> list[TextChunk]:
    """Split `text` into chunks of at most `max_tokens` model tokens (special tokens included).

    `tokenizer` is a Hugging Face fast tokenizer. `overlap` (tokens) must be below half the
    window. Returns [] for blank text. Raises ValueError on impossible sizes.
    """
    budget = max_tokens - 2
    if budget < 8:
        raise ValueError("max_tokens must be at least 10")
    if not 0 <= overlap < budget // 2:
        raise ValueError("overlap must be between 0 and half the chunk size")
    if not text.strip():
        return []
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = encoding["offset_mapping"]
    if len(offsets) <= budget:
        return [TextChunk(text.strip(), 0, len(text))]

    chunks: list[TextChunk] = []
    start_token = 0
    while start_token < len(offsets):
        end_token = min(start_token + budget, len(offsets))
        char_start = offsets[start_token][0]
        char_end = offsets[end_token - 1][1]
        if end_token < len(offsets):
            char_end = _nicer_end(text, char_start, char_end)
            # Map the chosen character end back to a token index (first token starting at/after it).
            while end_token > start_token + 1 and offsets[end_token - 1][0] >= char_end:
                end_token -= 1
        piece = text[char_start:char_end].strip()
        if piece:
            chunks.append(TextChunk(piece, char_start, char_end))
        if end_token >= len(offsets):
            break
        start_token = max(end_token - overlap, start_token + 1)
    return chunks


def _nicer_end(text: str, start: int, end: int) -> int:
    """Move `end` back to the best boundary within the last quarter of [start, end)."""
    floor = start + (end - start) * 3 // 4
    window = text[floor:end]
    for pattern in _BOUNDARIES:
        matches = list(pattern.finditer(window))
        if matches:
            return floor + matches[-1].end()
    return end
