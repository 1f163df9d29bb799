"""HTML (.html, .htm, .xhtml) with BeautifulSoup + lxml: the visible text of the page.

Drops script, style, nav, footer, form controls, navigation roles and hidden elements;
keeps headings as Markdown `#` lines, list items as `- ` lines and table rows as
`cell | cell` lines; block elements become separate lines. The encoding is detected by
BeautifulSoup (BOM, <meta charset>, then guessing). `convert(data, path, max_bytes) ->
Document`, title from <title> (else the first <h1>). Raises SkipEntity("unreadable HTML: ...").
"""
from __future__ import annotations

import codecs
import re
from pathlib import Path

from bs4 import BeautifulSoup, Comment, Doctype, NavigableString, ProcessingInstruction

from connectors.errors import SkipEntity
from connectors.converters._common import (Document, check_not_binary, short_error,
                                           squeeze_blank_lines)

EXTENSIONS = frozenset({".html", ".htm", ".xhtml"})

_DROP = ["script", "style", "noscript", "template", "nav", "footer", "svg", "canvas", "iframe",
         "object", "button", "select", "input", "textarea", "head"]
_DROP_ROLES = {"navigation", "banner", "contentinfo", "search", "menu", "menubar"}
_BLOCKS = ["p", "div", "section", "article", "main", "aside", "header", "footer", "blockquote",
           "pre", "dl", "dt", "dd", "ul", "ol", "figure", "figcaption", "address", "details",
           "summary", "form", "fieldset", "hr", "caption"]
_HEADING = re.compile(r"^h([1-6])$")
_SPACES = re.compile(r"[ \t\f\v\u00a0\u200b]+")
_NOT_TEXT = (Comment, Doctype, ProcessingInstruction)
_LIST_GAP = re.compile(r"^(- .*)\n\n+(?=- )", re.MULTILINE)


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        check_not_binary(data)
    try:
        soup = BeautifulSoup(data, "lxml")
        title = _title(soup)
        text = _visible_text(soup)
    except Exception as exc:
        raise SkipEntity(f"unreadable HTML: {short_error(exc)}") from exc
    return Document(text=text, title=title)


def _title(soup: BeautifulSoup) -> str | None:
    for tag in (soup.title, soup.find("h1")):
        if tag is not None:
            text = " ".join(tag.get_text(" ").split())
            if text:
                return text
    return None


def _visible_text(soup: BeautifulSoup) -> str:
    for tag in soup.find_all(_DROP):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": True}):
        if not tag.decomposed and str(tag.get("role", "")).lower() in _DROP_ROLES:
            tag.decompose()
    for tag in soup.find_all(attrs={"hidden": True}):
        if not tag.decomposed:
            tag.decompose()
    for node in soup.find_all(string=lambda s: isinstance(s, _NOT_TEXT)):
        node.extract()
    for br in soup.find_all("br"):
        br.replace_with(NavigableString("\n"))
    for item in soup.find_all("li"):
        item.insert(0, NavigableString("\n- "))
        item.append(NavigableString("\n"))
    for block in soup.find_all(_BLOCKS):
        block.insert(0, NavigableString("\n\n"))
        block.append(NavigableString("\n\n"))
    for table in reversed(soup.find_all("table")):  # innermost first
        table.replace_with(NavigableString("\n\n" + "\n".join(_table_rows(table)) + "\n\n"))
    for heading in soup.find_all(_HEADING):
        level = int(heading.name[1])
        text = _inline(heading)
        heading.replace_with(NavigableString(f"\n\n{'#' * level} {text}\n\n" if text else "\n"))
    lines = []
    for line in soup.get_text().split("\n"):
        line = _SPACES.sub(" ", line).strip()
        if line != "-":  # an empty list item
            lines.append(line)
    text = _LIST_GAP.sub(r"\1\n", "\n".join(lines))  # no blank lines between list items
    return squeeze_blank_lines(text)


def _table_rows(table) -> list[str]:
    rows = []
    for tr in table.find_all("tr"):
        cells = [_inline(cell) for cell in tr.find_all(["th", "td"], recursive=False)]
        if any(cells):
            rows.append(" | ".join(cells))
    if not rows:  # a layout table without rows of cells
        text = _inline(table)
        return [text] if text else []
    return rows


def _inline(tag) -> str:
    """The text of `tag` on one line (block boundaries inside it became whitespace)."""
    return " ".join(tag.get_text().split())
