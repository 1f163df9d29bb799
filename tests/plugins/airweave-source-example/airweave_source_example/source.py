"""Example Notes: the notes of a notebook on an "Example Notes" HTTP API.

Declared outside the product, in its own package, through the entry point group
`airweave.sources` (pyproject.toml); nothing in the product names it. It uses the product's
source contract exactly as a built-in source does: `@source`, typed config and auth fields,
the shared HTTP client (`self.http`: retries, 429 with Retry-After, SSRF guard, auth), an
incremental cursor and deletions.

API: `GET /api/notebooks/{notebook}/notes?page=N[&changed_since=ISO]` with `X-Api-Key: <key>`
answers `{"notes": [{"id", "title", "text", "changed", "trashed"}], "next_page": N|null}`.
"""
from __future__ import annotations

from dataclasses import dataclass

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import cursor_pages
from connectors.registry import source
from connectors.sources._saas import parse_time


@dataclass
class ExampleNoteEntity(BaseEntity):
    """One note: its title (`name`) and text."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}"


@source(
    name="Example Notes",
    short_name="example_notes",
    description="Notes of an Example Notes notebook (an example plugin package).",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", is_secret=True, required=True),),
    config_fields=(ConfigField("notebook", "Notebook", "string", "The notebook to index.", required=True),),
    labels=("Example",),
    entity_types=(ExampleNoteEntity,),
    rate_limit_level="connection",
    rate_limit="5/second",
    base_url="https://notes.example.org",
)
class ExampleNotesSource(BaseSource):
    """Lists a notebook's notes page by page; see the module docstring."""

    def http_auth(self):
        return HeaderAuth({"X-Api-Key": self.credentials["api_key"]})

    def generate_entities(self, cursor):
        self._since = (cursor or {}).get("changed_since")
        self._newest, self._deleted = self._since, []
        notebook = self.config["notebook"]

        def fetch(page):
            params = {"page": page or 1}
            if self._since:
                params["changed_since"] = self._since
            body = self.http.get_json(f"/api/notebooks/{notebook}/notes", params=params)
            return body["notes"], body.get("next_page")

        for notes in cursor_pages(fetch):
            for note in notes:
                self._newest = max(self._newest or "", note["changed"])
                if note.get("trashed"):
                    self._deleted.append(note["id"])
                    continue
                yield ExampleNoteEntity(
                    entity_id=note["id"], name=note["title"], text=note["text"],
                    breadcrumbs=[Breadcrumb(notebook, notebook, "notebook")], updated_at=parse_time(note["changed"]),
                    web_url=f"https://notes.example.org/{notebook}/{note['id']}")

    def is_full_listing(self):
        return not self._since

    def deleted_entity_ids(self):
        return self._deleted

    def next_cursor(self):
        return {"changed_since": self._newest}
