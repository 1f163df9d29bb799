"""Microsoft PowerPoint: the presentations (.pptx) of the signed-in user's OneDrive, and nothing else of it.

The OneDrive source narrowed to one file type: the drive's delta round
(`GET /drives/{drive-id}/root/delta`, Microsoft Graph v1.0) keeps the items whose name ends in
`.pptx`; each is downloaded from `/drives/{drive}/items/{id}/content` only when it must be
indexed (hashed by `cTag`) and read by the PPTX converter (each slide's text and notes, in
order). Folders are breadcrumbs; later syncs start from the saved `@odata.deltaLink` and list
only what changed, deleted items carry a `deleted` facet. Config `folder` limits the sync to one
folder path. Legacy `.ppt` files have no converter and are left out.

Entities: PowerPointPresentationEntity, `entity_id` = the drive item id, `web_url` its `webUrl`.
Cursor: `{"drive": {"drive_id", "delta_link", "folders"}}` as OneDrive's.
"""
from __future__ import annotations

from connectors.notifications.vendors import OneDriveNotifications
from connectors.registry import source
from connectors.sources._msgraph import GraphFileEntity
from connectors.sources.onedrive import ONEDRIVE_CAPABILITIES, OneDriveSource


class PowerPointPresentationEntity(GraphFileEntity):
    """A PowerPoint presentation (.pptx) of a OneDrive."""


@source(
    name="PowerPoint",
    short_name="powerpoint",
    notifications=OneDriveNotifications,
    description="PowerPoint presentations (.pptx) of your OneDrive, with folders as breadcrumbs, kept fresh "
                "with delta queries.",
    labels=("Knowledge Base",),
    entity_types=(PowerPointPresentationEntity,),
    **ONEDRIVE_CAPABILITIES,
)
class PowerPointSource(OneDriveSource):
    """OneDrive narrowed to PowerPoint presentations; see the module docstring."""

    only_extensions = (".pptx",)
    entity_class = PowerPointPresentationEntity
