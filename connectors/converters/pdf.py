"""PDF with pypdf: the text layer of each page, pages separated by a blank line, ligatures
spelled out.

`convert(data, path, max_bytes) -> Document`, title from the document metadata.
Raises SkipEntity: "encrypted PDF" (a password is needed), "unreadable PDF: <error>".
A scanned PDF without a text layer yields no text (convert_file then says "empty").
"""
from __future__ import annotations

import io
import logging
from pathlib import Path

from pypdf import PdfReader

from connectors.errors import SkipEntity
from connectors.converters._common import Document, short_error, squeeze_blank_lines

EXTENSIONS = frozenset({".pdf"})

# pypdf logs a warning for every oddity of real-world PDFs; they are not our errors.
logging.getLogger("pypdf").setLevel(logging.ERROR)

# Typographic ligatures (U+FB00..U+FB06) spelled out, so "ﬁnancial" is found by "financial".
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi",
                            "\ufb04": "ffl", "\ufb05": "st", "\ufb06": "st"})


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _decrypt_without_password(reader):
            raise SkipEntity("encrypted PDF")
        pages = []
        for page in reader.pages:
            pages.append(squeeze_blank_lines(page.extract_text() or ""))
        title = _metadata_title(reader)
    except SkipEntity:
        raise
    except Exception as exc:  # pypdf raises many types on malformed files
        raise SkipEntity(f"unreadable PDF: {short_error(exc)}") from exc
    return Document(text="\n\n".join(p for p in pages if p).translate(_LIGATURES), title=title)


def _decrypt_without_password(reader: PdfReader) -> bool:
    """True when the PDF opens with the empty user password (owner-password-only PDFs)."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # PdfReadError, NotImplementedError, DependencyError (unsupported algorithm)
        return False


def _metadata_title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return None
    title = " ".join(str(title).split()) if title else ""
    return title or None
