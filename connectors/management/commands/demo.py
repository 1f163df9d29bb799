"""python manage.py demo: make sure the demo collection exists, then print how to search it.

Used by `make run`. Indexes the project's own documentation (README.md and docs/) into the
collection `docs` of the default organization when that collection does not exist yet.
"""
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from airweave.collections.models import Collection
from airweave.tenancy.services import api_key_create, organization_get_or_create

DEMO_COLLECTION = "docs"


class Command(BaseCommand):
    help = "Create the demo collection (the project's docs) if missing and print a fresh API key and a curl search."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args, host, port, **options):
        organization = organization_get_or_create(name=settings.AIRWEAVE_DEFAULT_ORG)
        if not Collection.objects.filter(organization=organization, readable_id=DEMO_COLLECTION).exists():
            self.stdout.write("Indexing this project's documentation as the demo collection 'docs'…")
            call_command("index", str(settings.BASE_DIR), collection=DEMO_COLLECTION, name="Project documentation",
                         org=organization.name, include=["README.md", "docs/**/*.md"], stdout=self.stdout,
                         stderr=self.stderr)
        key = api_key_create(organization=organization, name="make run").key
        base = f"http://{host}:{port}"
        self.stdout.write(
            f"\nServer: {base}/   API docs: {base}/docs   MCP: {base}/mcp?collection={DEMO_COLLECTION}\n"
            f"API key (organization '{organization.name}', shown once): {key}\n\n"
            f"Try a search:\n"
            f"curl -s -X POST {base}/collections/{DEMO_COLLECTION}/search/instant \\\n"
            f"  -H 'X-API-Key: {key}' -H 'Content-Type: application/json' \\\n"
            f"  -d '{{\"query\": \"How does hybrid search combine keyword and vector results?\", \"limit\": 3}}'\n"
        )
