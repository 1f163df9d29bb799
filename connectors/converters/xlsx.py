"""Excel (.xlsx, .xlsm) with openpyxl: each sheet as `## Sheet: name`, then its rows.

Rows are rendered by `_common.render_table` (`Header: value | ...` lines, capped at
MAX_TABLE_ROWS per sheet). Cached values of formulas are read, not the formulas.
`convert(data, path, max_bytes) -> Document`, title from the workbook properties.
Raises SkipEntity("unreadable XLSX: ...") or SkipEntity("file too large: ...") for zip bombs.
"""
from __future__ import annotations

import io
from pathlib import Path

import openpyxl

from connectors.errors import SkipEntity
from connectors.converters._common import Document, check_zip, render_table, short_error

EXTENSIONS = frozenset({".xlsx", ".xlsm"})


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    check_zip(data, "XLSX", max_bytes)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            sections = []
            for sheet in workbook.worksheets:
                lines = render_table(sheet.iter_rows(values_only=True))
                if lines:
                    sections.append("\n".join([f"## Sheet: {sheet.title}", "", *lines]))
            title = (workbook.properties.title or "").strip() or None
        finally:
            workbook.close()
    except SkipEntity:
        raise
    except Exception as exc:
        raise SkipEntity(f"unreadable XLSX: {short_error(exc)}") from exc
    return Document(text="\n\n".join(sections), title=title)
