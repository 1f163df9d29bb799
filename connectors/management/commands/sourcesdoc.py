"""python manage.py sourcesdoc [--check]: write docs/sources-index.md and the per-source table of
docs/access-control.md from the source registry."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from connectors.catalog import ACCESS_PAGE, INDEX, sources_markdown, with_access_table


class Command(BaseCommand):
    help = ("Write docs/sources-index.md, the list of every built-in source, and the per-source table of "
            "docs/access-control.md from the registry.")

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="only check: exit 1 when the file is stale")

    def handle(self, *args, check, **options):
        docs = Path(settings.BASE_DIR) / "docs"
        pages = {docs / INDEX: sources_markdown(docs)}
        access = docs / ACCESS_PAGE
        if access.exists():
            try:
                pages[access] = with_access_table(access.read_text())
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        for target, text in pages.items():
            if check:
                if not target.exists() or target.read_text() != text:
                    raise CommandError(f"{target} is stale: run manage.py sourcesdoc")
                self.stdout.write(f"{target} is current")
            elif not target.exists() or target.read_text() != text:
                target.write_text(text)
                self.stdout.write(f"wrote {target}")
