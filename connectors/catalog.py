"""The catalog of built-in sources as Markdown: `docs/sources-index.md` is this, generated.

`manage.py sourcesdoc` writes it from the registry (`--check` fails when the file is stale) and
`tests/connectors/test_source_docs.py` fails when it differs, so the documented list of sources
can never drift from `GET /sources`. Plugin sources (installed packages) are not built in and
are left out.
"""
from __future__ import annotations

import re
from pathlib import Path

from connectors.base import BaseSource

INDEX = "sources-index.md"
_ROW_NAME = re.compile(r"`([a-z0-9_]+)`")


def built_in_sources() -> list[type[BaseSource]]:
    """The registered sources that ship with the product (modules under connectors.sources), by short name."""
    from connectors.registry import all_sources

    return [cls for cls in all_sources() if cls.__module__.startswith("connectors.sources.") and not cls.plugin]


def documented_in(docs_dir: Path) -> dict[str, list[str]]:
    """{short name: [docs page, ...]} for each short name in the first column of a table row of
    `docs_dir/sources*.md` (the generated index excluded)."""
    found: dict[str, list[str]] = {}
    for page in sorted(docs_dir.glob("sources*.md")):
        if page.name == INDEX:
            continue
        for line in page.read_text().splitlines():
            if line.startswith("| `"):
                for name in _ROW_NAME.findall(line.split("|")[1]):
                    found.setdefault(name, []).append(page.name)
    return found


def _auth(cls: type[BaseSource]) -> str:
    parts = []
    if "direct" in cls.auth_methods:
        parts.append("credentials" if cls.auth_fields else "none")
    if any(m.startswith("oauth") for m in cls.auth_methods):
        parts.append(f"OAuth ({cls.oauth_type})" if cls.oauth_type else "OAuth")
    return ", ".join(parts)


def sources_markdown(docs_dir: Path) -> str:
    """The text of docs/sources-index.md for the built-in sources registered now."""
    sources = built_in_sources()
    pages = documented_in(docs_dir)
    lines = ["---", "title: Every source", "---", f"# Every source ({len(sources)})", "",
             "Generated from the source registry by `manage.py sourcesdoc`; a test fails when it differs",
             "from `GET /sources`. Each source's module docstring says what it indexes and how it syncs;",
             "the page named in the last column has the family's details. Sources from installed packages",
             "(docs/connectors.md, \"A source in its own package\") are listed by `GET /sources` only.", "",
             "| short name | name | auth | labels | indexes | module | details |",
             "|---|---|---|---|---|---|---|"]
    for cls in sources:
        module = cls.__module__.replace(".", "/") + ".py"
        detail = ", ".join(f"[{p}]({p})" for p in pages.get(cls.short_name, [])) or "module docstring"
        description = (cls.description or "").replace("|", "\\|")
        lines.append(f"| `{cls.short_name}` | {cls.name} | {_auth(cls)} | {', '.join(cls.labels)} | {description} | "
                     f"`{module}` | {detail} |")
    return "\n".join(lines) + "\n"
