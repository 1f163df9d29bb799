"""Google Slides: the presentations of a user's Google Drive, and nothing else of it.

The Google Drive source narrowed to one type
(`mimeType = 'application/vnd.google-apps.presentation'` in the listing, the same type kept from
the changes feed): each deck is exported with `files.export` as text/plain (every slide's text
and speaker notes, in order), its folders are breadcrumbs, its Drive sharing is its access
control, and incremental syncs read `changes.list` from the saved start page token, exactly as
connectors/sources/google_drive.py describes.

Entities: GoogleSlidesPresentationEntity, `entity_id` = the Drive file id, `web_url` its
docs.google.com link. Cursor: `{"start_page_token": "...", "shared_drives": bool}`.
"""
from __future__ import annotations

from dataclasses import dataclass

from connectors.registry import source
from connectors.sources.google_drive import DRIVE_CAPABILITIES, GoogleDriveFileEntity, GoogleDriveSource

PRESENTATION = "application/vnd.google-apps.presentation"


@dataclass
class GoogleSlidesPresentationEntity(GoogleDriveFileEntity):
    """A Google Slides presentation, exported as plain text."""


@source(
    name="Google Slides",
    short_name="google_slides",
    description="Google Slides presentations of your Drive exported to text, with folders as breadcrumbs "
                "and Drive sharing as access control; changes read incrementally.",
    labels=("Knowledge Base",),
    entity_types=(GoogleSlidesPresentationEntity,),
    **DRIVE_CAPABILITIES,
)
class GoogleSlidesSource(GoogleDriveSource):
    """Google Drive narrowed to Slides; see the module docstring."""

    only_mime_types = (PRESENTATION,)
    entity_class = GoogleSlidesPresentationEntity
