"""Push: documents a client sends to `POST /collections/{readable_id}/documents`.

A collection gets one push connection, made on its first push (or created ahead like any
connection, with short name `push`). The push service (`connectors.sync.push`) hands each
request's documents to an instance of this source and runs the ordinary sync pipeline over it,
so that hashing, insert / update / keep, skips, deletions and the job record are those of any
sync. A run of the connection itself (`POST /source-connections/{id}/run`) lists nothing and,
not being a full listing, deletes nothing.

PushDocumentEntity: `entity_id` = the document's `id`; name, text, breadcrumbs, dates, links,
`metadata` (→ `raw_source_fields`) and access as sent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, SkipEntity
from connectors.registry import source


@dataclass
class PushDocumentEntity(BaseEntity):
    """A document sent by a client."""

    text: str = ""

    def textual_representation(self) -> str:
        if not self.text.strip():
            raise SkipEntity("empty: no text in document")
        return self.text


@source(
    name="Push API",
    short_name="push",
    mirrored_permissions=(("the viewers and is-public flag each pushed document carries", True),),
    description="Documents sent by your own code to POST /collections/{readable_id}/documents (batch "
                "upsert and delete by id).",
    auth_methods=("direct",),
    labels=("API",),
    entity_types=(PushDocumentEntity,),
    supports_access_control=True,
)
class PushSource(BaseSource):
    """Holds one request's documents (`documents`) and deletions (`delete_ids`)."""

    def __init__(self, config: dict, credentials: dict | None = None,
                 documents: list[PushDocumentEntity] | None = None, delete_ids: list[str] | None = None):
        super().__init__(config, credentials)
        self.documents = documents or []
        self.delete_ids = delete_ids or []

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        yield from self.documents

    def is_full_listing(self) -> bool:
        return False

    def deleted_entity_ids(self) -> list[str]:
        return list(self.delete_ids)
