"""python manage.py startsource NAME: write the skeleton of a source module and its test.

Writes `connectors/sources/NAME.py` (config fields, one entity type, an incremental cursor and
deletions, the shared HTTP client) and `tests/connectors/test_NAME.py` (a fake of the API with one
page, a 429, a refused key, a sync found by search). Both pass as generated; docs/connectors.md
says what to change next.
"""
from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from django.core.management.base import BaseCommand, CommandError

import connectors
from connectors.registry import all_sources

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "startsource"
SHORT_NAME = re.compile(r"[a-z][a-z0-9_]{1,48}")


def skeleton(short_name: str, title: str | None = None) -> dict[str, str]:
    """The two files of a new source: {"source": module text, "test": test module text}.

    Raises CommandError when `short_name` is not a lowercase Python identifier of 2 to 49
    characters (letters, digits, underscores), or is taken by a registered source.
    """
    if not SHORT_NAME.fullmatch(short_name) or keyword.iskeyword(short_name) or short_name.startswith("_"):
        raise CommandError(f"'{short_name}' is not a source short name: use 2-49 lowercase letters, digits and "
                           "underscores, starting with a letter (e.g. acme_wiki)")
    if short_name in {cls.short_name for cls in all_sources()}:
        raise CommandError(f"a source named '{short_name}' is already registered")
    words = short_name.split("_")
    values = {
        "short_name": short_name,
        "class_name": "".join(w.capitalize() for w in words),
        "title": title or " ".join(w.capitalize() for w in words),
        "base_url": f"https://api.{short_name.replace('_', '-')}.example",
        "web_base": f"https://{short_name.replace('_', '-')}.example",
    }
    return {kind: Template((TEMPLATES / f"{kind}.py-tpl").read_text()).substitute(values)
            for kind in ("source", "test")}


class Command(BaseCommand):
    help = "Write connectors/sources/NAME.py and tests/connectors/test_NAME.py: a source skeleton that passes its test."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the source's short name, e.g. acme_wiki")
        parser.add_argument("--title", help="its display name (default: from the short name)")
        # The checkout the `connectors` package was imported from, symbolic links not resolved.
        parser.add_argument("--project-dir", default=str(Path(connectors.__file__).parent.parent),
                            help="the checkout to write into (default: the one running this command)")

    def handle(self, *args, name, title, project_dir, **options):
        root = Path(project_dir)
        targets = {"source": root / "connectors" / "sources" / f"{name}.py",
                   "test": root / "tests" / "connectors" / f"test_{name}.py"}
        files = skeleton(name, title)
        existing = [str(p) for p in targets.values() if p.exists()]
        if existing:
            raise CommandError(f"not overwriting {', '.join(existing)}")
        for kind, path in targets.items():
            if not path.parent.is_dir():
                raise CommandError(f"{path.parent} is not a folder: is --project-dir a checkout of this project?")
            path.write_text(files[kind])
            self.stdout.write(f"wrote {path}")
        self.stdout.write(f"next: .venv/bin/python -m pytest {targets['test'].relative_to(root)} -q, then "
                          "replace the TODOs with the service's real API (docs/connectors.md)")
