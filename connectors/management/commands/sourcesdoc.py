"""python manage.py sourcesdoc [--check]: write docs/sources-index.md from the source registry."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from connectors.catalog import INDEX, sources_markdown


class Command(BaseCommand):
    help = "Write docs/sources-index.md, the list of every built-in source, from the registry."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="only check: exit 1 when the file is stale")

    def handle(self, *args, check, **options):
        docs = Path(settings.BASE_DIR) / "docs"
        text = sources_markdown(docs)
        target = docs / INDEX
        if check:
            if not target.exists() or target.read_text() != text:
                raise CommandError(f"{target} is stale: run manage.py sourcesdoc")
            self.stdout.write(f"{target} is current")
            return
        target.write_text(text)
        self.stdout.write(f"wrote {target}")
