"""Microsoft Word: the Word documents (.docx) of the signed-in user's OneDrive, and nothing else of it.

The OneDrive source narrowed to one file type: the drive's delta round
(`GET /drives/{drive-id}/root/delta`, Microsoft Graph v1.0) keeps the items whose name ends in
`.docx`; each is downloaded from `/drives/{drive}/items/{id}/content` only when it must be
indexed (hashed by `cTag`) and read by the DOCX converter (paragraphs, headings, tables). Folders
are breadcrumbs; later syncs start from the saved `@odata.deltaLink` and list only what changed,
deleted items carry a `deleted` facet. Config `folder` limits the sync to one folder path.
Legacy `.doc` files have no converter and are left out.

Entities: WordDocumentEntity, `entity_id` = the drive item id, `web_url` its `webUrl` (opens in
Word for the web). Cursor: `{"drive": {"drive_id", "delta_link", "folders"}}` as OneDrive's.
"""
from __future__ import annotations

from connectors.notifications.vendors import OneDriveNotifications
from connectors.registry import source
from connectors.sources._msgraph import GraphFileEntity
from connectors.sources.onedrive import ONEDRIVE_CAPABILITIES, OneDriveSource


class WordDocumentEntity(GraphFileEntity):
    """A Word document (.docx) of a OneDrive."""


@source(
    name="Word",
    short_name="word",
    notifications=OneDriveNotifications,
    description="Word documents (.docx) of your OneDrive, with folders as breadcrumbs, kept fresh with delta queries.",
    labels=("Knowledge Base",),
    entity_types=(WordDocumentEntity,),
    **ONEDRIVE_CAPABILITIES,
)
class WordSource(OneDriveSource):
    """OneDrive narrowed to Word documents; see the module docstring."""

    only_extensions = (".docx",)
    entity_class = WordDocumentEntity
