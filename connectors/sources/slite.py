"""Slite: the notes (Markdown) of a Slite workspace, nested as they are in its channels.

Config: `include_archived` (default false). Auth: a personal API key (Settings → API), sent as
`x-slite-api-key: <key>`, as Slite documents; a refused key (401) marks the connection
`needs_reauth`. What the key's user can read is indexed.

API (v1, `https://api.slite.com/v1`): `GET /notes` lists every note's metadata (`id`, `title`,
`parentNoteId`, `url`, `updatedAt`, `lastEditedAt`, `archivedAt`), paged by `cursor` (answered as
`nextCursor` while `hasNextPage`); `GET /notes/{noteId}?format=md` answers one note with its
`content` as Markdown. Rate limits answer 429, which the shared client waits out.

Entities: SliteNoteEntity (`note:{id}`; breadcrumbs: the parent notes, top first; `web_url` the
note's `url`). Archived notes are left out unless `include_archived`.

Incremental: cursor `{"since": {"notes": <newest lastEditedAt>}}`. Every run lists every note
(metadata only) and reads the content of those edited after the mark; what the listing no longer
holds (deleted, or archived when they are left out) is deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import ListedSource, Watermarks, items, parse_time


@dataclass
class SliteNoteEntity(BaseEntity):
    """A note: its title (`name`) and Markdown content."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Slite",
    short_name="slite",
    description="Notes of a Slite workspace, as Markdown, with their parent notes as breadcrumbs.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "Settings → API → Create a new key.", required=True,
                             is_secret=True),),
    config_fields=(ConfigField("include_archived", "Include archived notes", "boolean", default=False),),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(SliteNoteEntity,),
    rate_limit_level="connection",
    rate_limit="5/second",
    base_url="https://api.slite.com/v1",
)
class SliteSource(ListedSource, BaseSource):
    """Lists every note; reads the changed ones as Markdown; see the module docstring."""

    def http_auth(self):
        return HeaderAuth({"x-slite-api-key": self.credentials["api_key"]})

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        since = self._marks.since("notes")

        def fetch(page_cursor):
            body = self.http.get_json("/notes", params={"cursor": page_cursor} if page_cursor else None)
            return body.get("notes") or [], body.get("nextCursor") if body.get("hasNextPage") else None

        keep_archived = self.config.get("include_archived", False)
        notes = {n["id"]: n for n in items(fetch) if keep_archived or not n.get("archivedAt")}
        for note in notes.values():
            edited = note.get("lastEditedAt") or note.get("updatedAt")
            self.present(f"note:{note['id']}")
            self._marks.advance("notes", edited)
            if since and (edited or "") <= since:
                continue
            entity = self._note(note, notes)
            if entity is not None:
                yield entity

    def _note(self, summary: dict, notes: dict) -> SliteNoteEntity | None:
        try:
            note = self.http.get_json(f"/notes/{summary['id']}", params={"format": "md"})
        except HttpError as exc:
            if exc.status == 404:  # deleted between the listing and this read
                self._present.discard(f"note:{summary['id']}")
                return None
            raise
        crumbs, parent = [], summary.get("parentNoteId")
        while parent in notes and len(crumbs) < 50:
            crumbs.insert(0, Breadcrumb(f"note:{parent}", notes[parent].get("title") or parent, "SliteNoteEntity"))
            parent = notes[parent].get("parentNoteId")
        return SliteNoteEntity(
            entity_id=f"note:{note['id']}", name=note.get("title") or note["id"], text=note.get("content") or "",
            breadcrumbs=crumbs, web_url=note.get("url") or summary.get("url") or "",
            created_at=parse_time(note.get("createdAt")),
            updated_at=parse_time(note.get("lastEditedAt") or note.get("updatedAt")),
            raw_source_fields={"archived": bool(note.get("archivedAt")), "review_state": note.get("reviewState"),
                               "attributes": note.get("attributes") or None})
