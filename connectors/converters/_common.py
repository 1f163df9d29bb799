"""Shared pieces of the converters: the Document shape, text decoding, tabular rendering.

Every helper that can fail raises `connectors.base.SkipEntity(reason)`, never anything else.
"""
from __future__ import annotations

import codecs
import datetime as _dt
import decimal
import io
import math
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from typing import Iterable

from connectors.errors import SkipEntity

# Rows rendered per table (CSV file, XLSX sheet); the rest is counted, not indexed.
MAX_TABLE_ROWS = 5000
# Office files are zips: refuse ones that inflate beyond this many times the byte limit.
MAX_INFLATE_RATIO = 40
# Share of undecodable bytes above which a "text" file is treated as not text at all.
MAX_REPLACEMENT_SHARE = 0.02


@dataclass
class Document:
    """A converted file: `text` to chunk and index, a `title` found in it, extra `fields`.

    `fields` is JSON-serialisable (dates as ISO strings).
    """

    text: str
    title: str | None = None
    fields: dict = field(default_factory=dict)


def short_error(exc: BaseException, limit: int = 160) -> str:
    """`ExcType: message` on one line, cut to `limit` characters."""
    msg = " ".join(str(exc).split()) or "no details"
    out = f"{type(exc).__name__}: {msg}"
    return out if len(out) <= limit else out[: limit - 1] + "…"


def json_safe(value):
    """`value` made JSON-safe, recursively: dates/times as ISO strings, NUL removed from
    strings, NaN/infinity and unknown objects as str, tuples/sets as lists."""
    if isinstance(value, str):
        return value.replace("\x00", "")  # PostgreSQL json/text cannot hold NUL
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN and infinities are not JSON
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (_dt.date, _dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(json_safe(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").replace("\x00", "")
    return str(value)


def clean_text(text: str) -> str:
    """Text safe for PostgreSQL: no NUL, no lone surrogates, normalised line endings."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")

def decode_text(data: bytes) -> str:
    """Decode the bytes of a text file. Raises SkipEntity when they are not text.

    Order: UTF-8; a BOM (UTF-8/16/32); refuse binary-looking bytes; UTF-8 with replacement
    when the file has valid UTF-8 multi-byte sequences and few bad bytes; Windows-1252 (legacy
    Western files); UTF-8 with replacement when the replacement share is small. Otherwise
    "unreadable: not valid UTF-8 text". No statistical charset guessing: on short or repetitive
    input it reads noise as CJK text, and the result would depend on what else is installed.
    """
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a UTF-8 BOM is not text
    except UnicodeDecodeError:
        pass
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = data.decode(encoding, "replace")
            if _garbage_share(text) > MAX_REPLACEMENT_SHARE:
                raise SkipEntity("unreadable: binary content, not text")  # a BOM by chance
            return text
    check_not_binary(data)

    replaced = data.decode("utf-8", "replace")
    share = replaced.count("\ufffd") / max(len(replaced), 1)
    if share <= MAX_REPLACEMENT_SHARE and _UTF8_MULTIBYTE.search(data):
        return replaced  # UTF-8 with a few corrupt bytes
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        pass
    if share <= MAX_REPLACEMENT_SHARE:
        return replaced
    raise SkipEntity("unreadable: not valid UTF-8 text")


def _garbage_share(text: str) -> float:
    """Share of the first 20,000 characters that no text has: U+FFFD, control characters
    (other than whitespace), private-use, unassigned and surrogate code points."""
    sample = text[:20000]
    bad = sum(1 for ch in sample if ch == "\ufffd" or (
        ch not in "\t\n\r\f" and unicodedata.category(ch) in ("Cc", "Co", "Cn", "Cs")))
    return bad / max(len(sample), 1)


def check_not_binary(data: bytes) -> None:
    """Raise SkipEntity when the first 64 KB hold many control bytes (not text in any 8-bit
    or UTF-8 encoding; UTF-16/32 files carry a BOM and are decoded before this check)."""
    sample = data[:65536]
    if sample and len(_CONTROL.findall(sample)) / len(sample) > 0.05:
        raise SkipEntity("unreadable: binary content, not text")


def check_zip(data: bytes, kind: str, max_bytes: int) -> None:
    """Refuse an Office (zip) file that is not a zip or would inflate far beyond the limit."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            inflated = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise SkipEntity(f"unreadable {kind}: {short_error(exc)}") from exc
    limit = max(max_bytes, 1) * MAX_INFLATE_RATIO
    if inflated > limit:
        raise SkipEntity(f"file too large: {inflated} bytes uncompressed > limit {limit} bytes")


def cell_text(value) -> str:
    """One cell as text: None -> "", floats without a useless ".0", dates as ISO."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return " ".join(str(value).split())


def render_table(rows: Iterable[list], max_rows: int = MAX_TABLE_ROWS) -> list[str]:
    """Lines for a table, good for search: every row names its columns.

    Leading rows with a single filled cell (a sheet title) are kept as plain lines. The next
    row is the header when none of its filled cells is a number; then each row becomes one line
    `Header A: value | Header B: value` (empty cells left out), so a chunk cut from the middle
    of a table still says what its values mean. Without a header, rows are tab-separated.
    After a blank row, a row of two or more text-only cells starts a new table (new header).
    Past `max_rows` data rows, the remaining rows are only counted, in a final line.
    """
    lines: list[str] = []
    header: list[str] | None = None
    decided = gap = False
    kept = skipped = 0
    for row in rows:
        cells = [cell_text(c) for c in row]
        filled = [c for c in cells if c]
        if not filled:
            gap = decided
            continue
        if gap and len(filled) >= 2 and not any(_is_number(c) for c in filled):
            decided = False  # a new table below the previous one
        gap = False
        if not decided:
            if len(filled) == 1 and len(cells) > 1 and len(lines) < 3:
                lines.append(filled[0])
                continue
            decided = True
            if not any(_is_number(c) for c in filled):
                header = [c or f"column {i + 1}" for i, c in enumerate(cells)]
                lines.extend(["", "\t".join(filled)] if lines else ["\t".join(filled)])
                continue
        if kept >= max_rows:
            skipped += 1
            continue
        kept += 1
        if header:
            names = header + [f"column {i + 1}" for i in range(len(header), len(cells))]
            lines.append(" | ".join(f"{names[i]}: {c}" for i, c in enumerate(cells) if c))
        else:
            lines.append("\t".join(cells).rstrip("\t"))
    if skipped:
        lines.append(f"[{skipped} more rows not indexed]")
    return lines


def _is_number(s: str) -> bool:
    try:
        float(s.replace(",", ""))
        return True
    except ValueError:
        return False


def squeeze_blank_lines(text: str) -> str:
    """Strip trailing spaces and collapse runs of blank lines to one."""
    lines = [line.rstrip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
