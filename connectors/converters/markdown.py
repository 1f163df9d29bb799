"""Markdown (.md, .markdown, .mdx): front matter becomes `fields`, the body is the text.

`convert(data, path, max_bytes) -> Document` with title = front-matter `title`, else the
first level-1 heading. Broken front matter is kept as body text rather than losing the file.
"""
from __future__ import annotations

import re
from pathlib import Path

import frontmatter

from connectors.converters._common import Document, decode_text, json_safe

EXTENSIONS = frozenset({".md", ".markdown", ".mdx"})

_FENCE = re.compile(r"^\s*(```|~~~)")
_ATX_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$")
_SETEXT_H1 = re.compile(r"^=+\s*$")


def split_front_matter(text: str) -> tuple[dict, str]:
    """(JSON-safe front matter, body). ({}, text) when there is none or it does not parse."""
    try:
        metadata, body = frontmatter.parse(text)
    except Exception:  # YAML/TOML errors of many types: keep the file as plain Markdown
        return {}, text
    if not isinstance(metadata, dict):
        return {}, text
    return json_safe(metadata), body


def front_matter_title(fields: dict) -> str | None:
    title = fields.get("title")
    if isinstance(title, (str, int, float)) and not isinstance(title, bool):
        title = " ".join(str(title).split())
        return title or None
    return None


def first_h1(body: str) -> str | None:
    """The first `# Heading` (or setext `Heading\\n===`) outside code fences."""
    in_fence = False
    previous = ""
    for line in body.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            previous = ""
            continue
        if in_fence:
            continue
        match = _ATX_H1.match(line)
        if match:
            return match.group(1).strip() or None
        if previous.strip() and _SETEXT_H1.match(line):
            return previous.strip()
        previous = line
    return None


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    fields, body = split_front_matter(decode_text(data))
    title = front_matter_title(fields) or first_h1(body)
    # A page of front matter only (a redirect, a stub) is still findable by its title.
    return Document(text=body if body.strip() else (title or ""), title=title, fields=fields)
