"""The repository explains itself: what the code and the docs cite is in the repository.

Product code, docs/, the README and the Makefile cite only documents of this checkout (the API
contract is docs/api.md, the design docs/architecture.md), every relative link of the docs
resolves, and the README stays a front door a newcomer reads in minutes. Tests and benchmarks may
read the data sets beside the checkout (`SHARED_DATA` in tests/conftest.py, `SCIFACT` of `make
bench`): tests are not checked here, and bench/ may name `../shared/data`.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
CHECKED = ["README.md", "Makefile", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
CHECKED += sorted(str(p.relative_to(ROOT)) for top in ("airweave", "connectors", "search", "bench", "templates")
                  for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".html", ".yml", ".md"))
DATA_READERS = ("bench/",)
OUTSIDE = [
    (re.compile(r"(?<![\w/])API\.md"), "API.md (the contract is docs/api.md)"),
    (re.compile(r"\bDESIGN\b"), "DESIGN (the design is docs/architecture.md)"),
    (re.compile(r"\.\./shared"), "../shared (a folder outside the repository)"),
]
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@pytest.mark.parametrize("name", CHECKED)
def test_citations_stay_inside_the_repository(name):
    text = (ROOT / name).read_text(errors="replace")
    found = [f"line {text[:m.start()].count(chr(10)) + 1}: {why}" for pattern, why in OUTSIDE
             for m in pattern.finditer(text)
             if not (name.startswith(DATA_READERS) and text.startswith("../shared/data", m.start()))]
    assert found == [], f"{name} cites what the repository does not hold: {'; '.join(found)}"


@pytest.mark.parametrize("name", [n for n in CHECKED if n.endswith(".md") and not n.startswith(("airweave", "connectors",
                                                                                                  "search", "bench"))])
def test_relative_links_of_the_docs_resolve(name):
    path = ROOT / name
    broken = [target for target, _ in LINK.findall(path.read_text())
              if not target.startswith(("http://", "https://", "mailto:")) and not (path.parent / target).exists()]
    assert broken == [], f"{name} links to missing files: {broken}"


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for doc in ("docs/architecture.md", "docs/api.md", "docs/configuration.md", "docs/benchmarks.md"):
        assert (ROOT / doc).exists() and f"]({doc})" in readme, f"the README links {doc}"
    for command in ("make run", "make test", "make bench", "curl "):
        assert command in readme
