"""Google Docs: the documents of a user's Google Drive, and nothing else of it.

The Google Drive source narrowed to one type (`mimeType = 'application/vnd.google-apps.document'`
in the listing, the same type kept from the changes feed): each document is exported with
`files.export` as text/plain, its folders are breadcrumbs, its Drive sharing is its access
control, and incremental syncs read `changes.list` from the saved start page token, exactly as
connectors/sources/google_drive.py describes. For a user who wants their writing searchable
without every upload and spreadsheet of their Drive.

Entities: GoogleDocsDocumentEntity, `entity_id` = the Drive file id, `web_url` its
docs.google.com link. Cursor: `{"start_page_token": "...", "shared_drives": bool}`.
"""
from __future__ import annotations

from dataclasses import dataclass

from connectors.registry import source
from connectors.sources.google_drive import DRIVE_CAPABILITIES, GoogleDriveFileEntity, GoogleDriveSource

DOCUMENT = "application/vnd.google-apps.document"


@dataclass
class GoogleDocsDocumentEntity(GoogleDriveFileEntity):
    """A Google Docs document, exported as plain text."""


@source(
    name="Google Docs",
    short_name="google_docs",
    description="Google Docs documents of your Drive exported to text, with folders as breadcrumbs and "
                "Drive sharing as access control; changes read incrementally.",
    labels=("Knowledge Base",),
    entity_types=(GoogleDocsDocumentEntity,),
    **DRIVE_CAPABILITIES,
)
class GoogleDocsSource(GoogleDriveSource):
    """Google Drive narrowed to Docs; see the module docstring."""

    only_mime_types = (DOCUMENT,)
    entity_class = GoogleDocsDocumentEntity
