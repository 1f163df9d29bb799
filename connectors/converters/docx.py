"""Word (.docx) with python-docx: paragraphs, tables and text boxes in document order.

Headings become Markdown-ish `#` lines (Title -> `#`, Heading N -> N `#`), list paragraphs
`- ` lines, table rows `cell | cell` lines; equations (OMML) keep their linear text.
`convert(data, path, max_bytes) -> Document`, title from the core properties.
Raises SkipEntity("unreadable DOCX: ...") or SkipEntity("file too large: ...") for zip bombs.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from connectors.errors import SkipEntity
from connectors.converters._common import Document, check_zip, short_error, squeeze_blank_lines

EXTENSIONS = frozenset({".docx"})

_HEADING = re.compile(r"^Heading (\d)$")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_TEXT_TAGS = {_W + "t", _M + "t"}
_BREAK_TAGS = {_W + "br", _W + "cr"}
# Subtrees not read as part of the paragraph: text boxes are read separately, and
# mc:Fallback holds a second (VML) copy of what mc:Choice already has.
_SKIP_TAGS = {_W + "txbxContent", _MC_FALLBACK}


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    check_zip(data, "DOCX", max_bytes)
    try:
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                lines.extend(_paragraph(block))
            elif isinstance(block, Table):
                lines.extend(["", *_table(block), ""])
        lines.extend(_text_boxes(document))
        title = (document.core_properties.title or "").strip() or None
    except SkipEntity:
        raise
    except Exception as exc:
        raise SkipEntity(f"unreadable DOCX: {short_error(exc)}") from exc
    return Document(text=squeeze_blank_lines("\n".join(lines)), title=title)


def _text(element) -> str:
    """Text of a w:p element: runs, hyperlinks, equations, tabs and line breaks."""
    parts: list[str] = []
    _collect(element, parts)
    return "".join(parts).strip()


def _collect(element, parts: list[str]) -> None:
    for child in element:
        tag = child.tag
        if tag in _SKIP_TAGS:
            continue
        if tag in _TEXT_TAGS:
            parts.append(child.text or "")
        elif tag == _W + "tab":
            parts.append("\t")
        elif tag in _BREAK_TAGS:
            parts.append("\n")
        else:
            _collect(child, parts)


def _paragraph(paragraph: Paragraph) -> list[str]:
    text = _text(paragraph._p)
    if not text:
        return []
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        return ["", f"# {text}", ""]
    match = _HEADING.match(style)
    if match:
        return ["", f"{'#' * min(max(int(match.group(1)), 1), 6)} {text}", ""]
    if style.startswith("List"):
        return [f"- {text}"]
    return ["", text, ""]


def _table(table: Table) -> list[str]:
    """One line per row; merged cells (repeated by python-docx) are written once."""
    rows = []
    for row in table.rows:
        cells, previous = [], None
        for cell in row.cells:
            if cell._tc is previous:
                continue
            previous = cell._tc
            texts = [" ".join(_text(p._p).split()) for p in cell.paragraphs]
            texts += [line for nested in cell.tables for line in _table(nested)]
            cells.append(" ".join(t for t in texts if t))
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


def _text_boxes(document) -> list[str]:
    """Paragraphs inside text boxes (w:txbxContent), which the body walk leaves out."""
    lines = []
    for box in document.element.body.iter(_W + "txbxContent"):
        if any(a.tag == _MC_FALLBACK for a in box.iterancestors()):
            continue
        lines.extend(text for p in box.iter(_W + "p") if (text := _text(p)))
    return ["", *lines] if lines else []
