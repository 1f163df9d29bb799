"""Files -> text: one small module per format, each parsed by a well-kept library.

    convert_file(path, max_bytes=N) -> Document(text, title, fields)
    convert_bytes(data, file_name, max_bytes=N) -> Document   # zip members, git blobs, attachments
    read_front_matter(path) -> (fields, title)      # Markdown only, cheap, never raises
    SUPPORTED_EXTENSIONS                             # lower-case, with the dot

Formats: Markdown (front matter -> `fields`), plain text and source code, HTML, PDF (pypdf),
DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl), CSV/TSV (stdlib csv), e-mail
messages (.eml, stdlib email).

`convert_file` raises only `connectors.errors.SkipEntity(reason)`, with reasons such as
"file too large: N bytes > limit M bytes", "empty: no text extracted", "encrypted PDF",
"unreadable PDF: <error>", "unsupported file type: .xyz", "unreadable: <error>".
Returned text never contains NUL characters or lone surrogates (PostgreSQL-safe); anything
else, including special-token look-alikes such as `<|endoftext|>`, is kept as ordinary text.
"""
from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from connectors.errors import SkipEntity
from connectors.converters import csv, docx, html, mail, markdown, pdf, pptx, text, xlsx
from connectors.converters._common import Document, clean_text, decode_text, short_error

__all__ = ["Document", "convert_file", "convert_bytes", "read_front_matter", "SUPPORTED_EXTENSIONS"]

_CONVERTERS = {ext: module for module in (markdown, text, html, pdf, docx, pptx, xlsx, csv, mail)
               for ext in module.EXTENSIONS}
SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(_CONVERTERS)

# Front matter sits at the top of a file: this much is enough to read it.
_FRONT_MATTER_READ_BYTES = 256 * 1024


def convert_file(path: Path, *, max_bytes: int) -> Document:
    """Convert the file at `path` to a Document. Raises SkipEntity(reason) on any failure.

    The size is checked with os.stat before anything is read; the read itself is capped
    at `max_bytes` + 1 too, in case the file grows in between.
    """
    path = Path(path)
    extension = path.suffix.lower()
    converter = _CONVERTERS.get(extension)
    if converter is None:
        raise SkipEntity(f"unsupported file type: {extension or path.name}")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SkipEntity("unreadable: not a regular file")
        if st.st_size > max_bytes:
            raise SkipEntity(f"file too large: {st.st_size} bytes > limit {max_bytes} bytes")
        if st.st_size == 0:
            raise SkipEntity("empty: no text extracted")
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise SkipEntity(f"unreadable: {exc.strerror or short_error(exc)}") from exc
    if len(data) > max_bytes:
        raise SkipEntity(f"file too large: {len(data)}+ bytes > limit {max_bytes} bytes")
    return convert_bytes(data, path, max_bytes=max_bytes)


def convert_bytes(data: bytes, path: Path, *, max_bytes: int) -> Document:
    """Convert `data`, the content of a file named `path` (its extension picks the converter), e.g. a
    downloaded web page as `Path("page.html")`. Raises SkipEntity(reason) on any failure."""
    path = Path(path)
    extension = path.suffix.lower()
    converter = _CONVERTERS.get(extension)
    if converter is None:
        raise SkipEntity(f"unsupported file type: {extension or path.name}")
    if not data:
        raise SkipEntity("empty: no text extracted")
    if len(data) > max_bytes:
        raise SkipEntity(f"file too large: {len(data)}+ bytes > limit {max_bytes} bytes")
    try:
        document = converter.convert(data, path, max_bytes)
    except SkipEntity:
        raise
    except (MemoryError, RecursionError) as exc:
        raise SkipEntity(f"unreadable: {type(exc).__name__} while converting") from exc
    except Exception as exc:  # a converter bug or a library error it did not expect
        raise SkipEntity(f"unreadable {extension.lstrip('.').upper()}: {short_error(exc)}") from exc

    document.text = clean_text(document.text).strip()
    if not document.text:
        raise SkipEntity("empty: no text extracted")
    if document.title is not None:
        document.title = clean_text(document.title).strip() or None
    return document


def read_front_matter(path: Path) -> tuple[dict, str | None]:
    """(JSON-safe front matter fields, front-matter title or None) of a Markdown file.

    Reads at most the first 256 KB. Returns ({}, None) for other files, files without
    front matter, and on any error (this is used while listing files; it must not fail).
    """
    path = Path(path)
    if path.suffix.lower() not in markdown.EXTENSIONS:
        return {}, None
    try:
        with open(path, "rb") as fh:
            head = fh.read(_FRONT_MATTER_READ_BYTES)
        try:  # the read may end inside a multi-byte character: leave that tail out
            head_text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        except UnicodeDecodeError:
            head_text = decode_text(head)
        fields, _ = markdown.split_front_matter(clean_text(head_text))
    except (OSError, SkipEntity, ValueError):
        return {}, None
    return fields, markdown.front_matter_title(fields)
