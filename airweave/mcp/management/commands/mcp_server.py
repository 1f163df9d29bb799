"""python manage.py mcp_server: the MCP server over stdio, for desktop clients (Claude Desktop, Cursor).

Environment (a desktop client's configuration sets it):
  AIRWEAVE_API_KEY     required: the API key the searches run as
  AIRWEAVE_COLLECTION  the collection's readable id (else the `search` tool takes it as an argument)
  AIRWEAVE_BASE_URL    search a remote server through its REST API; unset: search this installation
                       in-process (its database, its models)
stdout carries the protocol only; logs go to stderr.
"""
import os

import anyio
from django.core.management.base import BaseCommand, CommandError

from airweave.mcp.backends import InProcessBackend, RemoteBackend
from airweave.mcp.tools import build_server
from airweave.tenancy.context import actor_for_credential


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio (AIRWEAVE_API_KEY, AIRWEAVE_COLLECTION, AIRWEAVE_BASE_URL)."

    def add_arguments(self, parser):
        parser.add_argument("--collection", default=os.environ.get("AIRWEAVE_COLLECTION", ""),
                            help="readable id of the collection (default: AIRWEAVE_COLLECTION)")
        parser.add_argument("--base-url", default=os.environ.get("AIRWEAVE_BASE_URL", ""),
                            help="a remote server to search through its REST API (default: AIRWEAVE_BASE_URL)")

    def handle(self, *args, collection, base_url, **options):
        api_key = os.environ.get("AIRWEAVE_API_KEY", "").strip()
        if not api_key:
            raise CommandError("Set AIRWEAVE_API_KEY to an API key (manage.py create_api_key prints one).")
        if base_url:
            backend = RemoteBackend(base_url=base_url, api_key=api_key)
        else:
            actor = actor_for_credential(api_key)
            if actor is None:
                raise CommandError("AIRWEAVE_API_KEY is not a valid, unexpired API key of this installation.")
            backend = InProcessBackend(organization=actor.organization, user_email=actor.email, actor=actor,
                                       credential=api_key)
        try:
            server = build_server(backend=backend, collection=collection.strip() or None, transport="stdio")
        except ValueError as exc:
            raise CommandError(f"AIRWEAVE_COLLECTION: {exc}") from None
        anyio.run(server.run_stdio_async)
