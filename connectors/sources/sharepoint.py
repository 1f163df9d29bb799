"""SharePoint: the document libraries of SharePoint sites, converted to text by the file converters.

API (Microsoft Graph v1.0): the sites of config `sites` (`GET /sites/{hostname}:/{path}` or a
site id), or every site the user can reach (`GET /sites?search=*`, paginated by
`@odata.nextLink`); each site's document libraries (`GET /sites/{site-id}/drives`); each
library's delta round (`GET /drives/{drive-id}/root/delta`, as OneDrive: see
connectors/sources/onedrive.py and _msgraph.py). Breadcrumbs: site → library → folders.

Cursor: `{"drives": {<drive id>: {"delta_link", "folders"}}}`. A run is a full listing only
when every library was listed from the start (a new library, an expired delta link, or a
forced full sync); otherwise deletions come from the delta rounds' `deleted` items.

Access (`supports_access_control`): each file's permissions and the tenant's groups, as OneDrive
(connectors/sources/onedrive.py): one permissions request per file indexed. Site groups (Owners,
Members, Visitors) have no member listing in Graph v1.0 and are not mirrored: a file shared only
through them stays closed to their members.
"""
from __future__ import annotations

from typing import Iterator
from urllib.parse import quote

from connectors.base import AccessMembership, BaseEntity, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE,
                                         GraphFileEntity, GraphSource, pages)
from connectors.sources.onedrive import GRAPH_MIRRORED_PERMISSIONS, drive_items, graph_group_memberships


class SharePointFileEntity(GraphFileEntity):
    """A file of a SharePoint document library."""


@source(
    name="SharePoint",
    short_name="sharepoint",
    description="Files of SharePoint document libraries, kept fresh with delta queries.",
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(ConfigField("sites", "Sites", "array",
                               "Sites as hostname:/path (contoso.sharepoint.com:/sites/Marketing) or site ids; "
                               "empty: every site you can reach.", items_type="string"),),
    labels=("File storage", "Knowledge base"),
    entity_types=(SharePointFileEntity,),
    supports_access_control=True,
    mirrored_permissions=GRAPH_MIRRORED_PERMISSIONS,
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)
class SharePointSource(GraphSource):
    """See the module docstring."""

    def generate_access_memberships(self) -> list[AccessMembership]:
        """The tenant's groups (see onedrive.graph_group_memberships), after the sites are checked (a site
        that does not exist fails first, as a config_error)."""
        self._sites()
        return graph_group_memberships(self)

    def _sites(self) -> list[dict]:
        wanted = self.config.get("sites") or []
        if not wanted:
            return list(pages(self.http, "/sites", params={"search": "*", "$select": "id,displayName,name,webUrl"}))
        out = []
        for site in wanted:
            ref = site.strip()
            if ":/" in ref:  # hostname:/server-relative path
                host, _, path = ref.partition(":/")
                ref = f"{host}:/{quote(path.strip('/'))}:"
            try:
                out.append(self.http.get_json(f"/sites/{ref}", params={"$select": "id,displayName,name,webUrl"}))
            except HttpError as exc:
                if exc.status in (400, 404):
                    raise SourceError(f"SharePoint site '{site}' does not exist or this account cannot read it",
                                      "config_error") from None
                raise
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = (cursor or {}).get("drives") or {}
        self._drives: dict[str, dict] = {}
        for site in self._sites():
            site_crumb = Breadcrumb(site["id"], site.get("displayName") or site.get("name") or site["id"],
                                    "SharePointSite")
            for drive in pages(self.http, f"/sites/{site['id']}/drives",
                               params={"$select": "id,name,webUrl,driveType"}):
                state = dict(previous.get(drive["id"]) or {})
                self._drives[drive["id"]] = state
                prefix = [site_crumb, Breadcrumb(drive["id"], drive.get("name", ""), "SharePointDrive")]
                yield from drive_items(self, drive["id"], state, crumbs_prefix=prefix, entity_cls=SharePointFileEntity,
                                       extra_fields={"site_id": site["id"], "site_name": site_crumb.name,
                                                     "library": drive.get("name", "")})

    def is_full_listing(self) -> bool:
        return all(s.get("full") for s in self._drives.values())

    def deleted_entity_ids(self) -> list[str]:
        return [i for s in self._drives.values() for i in s.get("deleted") or []]

    def next_cursor(self) -> dict:
        return {"drives": {d: {"delta_link": s["delta_link"], "folders": s.get("folders") or {}}
                           for d, s in self._drives.items() if s.get("delta_link")}}
