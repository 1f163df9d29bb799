"""PowerPoint (.pptx) with python-pptx: a `## Slide N` header, then the slide's text.

Per slide: the title (`## Slide N: Title`), text frames and tables of every shape (groups
included, in reading order top-to-bottom, left-to-right), then `Notes: ...`.
`convert(data, path, max_bytes) -> Document`, title from the core properties.
Raises SkipEntity("unreadable PPTX: ...") or SkipEntity("file too large: ...") for zip bombs.
"""
from __future__ import annotations

import io
from pathlib import Path

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE

from connectors.errors import SkipEntity
from connectors.converters._common import Document, check_zip, short_error, squeeze_blank_lines

EXTENSIONS = frozenset({".pptx"})


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    check_zip(data, "PPTX", max_bytes)
    try:
        presentation = Presentation(io.BytesIO(data))
        lines: list[str] = []
        for number, slide in enumerate(presentation.slides, start=1):
            lines.extend(_slide(number, slide))
        title = (presentation.core_properties.title or "").strip() or None
    except SkipEntity:
        raise
    except Exception as exc:
        raise SkipEntity(f"unreadable PPTX: {short_error(exc)}") from exc
    return Document(text=squeeze_blank_lines("\n".join(lines)), title=title)


def _slide(number: int, slide) -> list[str]:
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    lines = ["", f"## Slide {number}: {title}" if title else f"## Slide {number}", ""]
    for shape in _ordered(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        lines.extend(_shape(shape))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = notes.text.strip() if notes is not None else ""
        if text:
            lines.extend(["", f"Notes: {text}"])
    return lines


def _ordered(shapes):
    return sorted(shapes, key=lambda s: ((s.top or 0), (s.left or 0)))


def _shape(shape) -> list[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [line for child in _ordered(shape.shapes) for line in _shape(child)]
    lines: list[str] = []
    if getattr(shape, "has_table", False) and shape.has_table:
        lines.append("")
        for row in shape.table.rows:
            cells = [" ".join(cell.text.split()) for cell in row.cells]
            if any(cells):
                lines.append(" | ".join(cells))
        lines.append("")
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for paragraph in shape.text_frame.paragraphs:
            text = paragraph.text.replace("\v", "\n").strip()  # \v marks a line break
            if text:
                lines.append(("  " * paragraph.level) + text)
        lines.append("")
    return lines
