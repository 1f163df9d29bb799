"""CSV/TSV with the stdlib csv module: the delimiter is sniffed (`,` `;` tab `|`).

Rows are rendered by `_common.render_table` (`Header: value | ...` lines, capped at
MAX_TABLE_ROWS). `convert(data, path, max_bytes) -> Document` (no title).
Raises SkipEntity when the bytes are not text, or "unreadable CSV: ..." on a parse error.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from connectors.errors import SkipEntity
from connectors.converters._common import Document, decode_text, render_table, short_error

EXTENSIONS = frozenset({".csv", ".tsv"})


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    text = decode_text(data)
    if path.suffix.lower() == ".tsv":
        delimiter = "\t"
    else:
        delimiter = _sniff(text[:16384])
    try:
        csv.field_size_limit(max(max_bytes, 131072))
        rows = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        lines = render_table(rows)
    except csv.Error as exc:
        raise SkipEntity(f"unreadable CSV: {short_error(exc)}") from exc
    return Document(text="\n".join(lines))


def _sniff(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        counts = {d: sample.count(d) for d in ",;\t|"}
        return max(counts, key=counts.get) if any(counts.values()) else ","
