"""OneDrive: the files of the signed-in user's drive, converted to text by the file converters.

API (Microsoft Graph v1.0): `GET /me/drive` (the drive id), then the drive's delta round
`GET /drives/{drive-id}/root/delta` (see connectors/sources/_msgraph.py): the first round lists
every item, later rounds start from the saved `@odata.deltaLink` and list only what changed;
deleted items carry a `deleted` facet. Folders are not entities, they are breadcrumbs. Delta
answers do not carry `parentReference.path`, so the folders seen are kept in the cursor
(`{"delta_link": ..., "folders": {<id>: [<name>, <parent id>]}}`) to build breadcrumbs of files
changed later.

Files: OneDriveFileEntity (`entity_id` = the drive item id; `web_url` = its `webUrl`), a
GraphFileEntity: its content is downloaded from `/drives/{drive}/items/{id}/content` only when
it must be indexed, hashed by `cTag`. Files over AIRWEAVE_MAX_FILE_BYTES are skipped with a
reason without being downloaded. OneNote packages and other items without a `file` facet are
left out. Config `folder` limits the sync to one folder path (e.g. `/Documents/Specs`).

Access (`supports_access_control`; shared with SharePoint): each file's permissions,
`GET /drives/{drive}/items/{id}/permissions` (inherited ones included, as Graph lists them; one
request per file indexed, none for a file over AIRWEAVE_MAX_FILE_BYTES, which is skipped anyway):
a user grant (`grantedToV2.user` / `siteUser`, or each of a sharing link's
`grantedToIdentitiesV2`) becomes `user:<email>` (its `email`, else the address in the
`loginName` claim), a Microsoft 365 / Entra group grant `group:<group id>`; a sharing link of
scope `anonymous` or `organization` opens the file to the organization. Group members are listed
at each sync: `GET /groups` and `GET /groups/{id}/members` (users by `mail`, else
`userPrincipalName`; groups inside groups nested), which needs `GroupMember.Read.All`: without it
(HTTP 403, and for personal Microsoft accounts, which have no groups) no group member is mirrored
and a file shared with a group alone stays closed to its members. SharePoint site groups
(`siteGroup`: Owners, Members, Visitors) have no member listing in Graph v1.0: not mirrored.
"""
from __future__ import annotations

import logging
from typing import Iterator
from urllib.parse import quote

from connectors.base import AccessMembership, BaseEntity, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.notifications.vendors import OneDriveNotifications
from connectors.registry import source
from connectors.sources._cloud_files import max_file_bytes
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE, DeltaRound,
                                         GraphFileEntity, GraphSource, download_fetcher, graph_time, is_removed, pages)

logger = logging.getLogger(__name__)
# What the OneDrive and SharePoint sources mirror of Microsoft's sharing (docs/access-control.md).
GRAPH_MIRRORED_PERMISSIONS = (
    ("people a file is shared with, directly or inherited from its folders", True),
    ("sharing links: anyone or the organization (open), specific people", True),
    ("Microsoft 365 / Entra groups with their members, nested (needs GroupMember.Read.All)", True),
    ("SharePoint site groups (Owners, Members, Visitors)", False),
)


class OneDriveFileEntity(GraphFileEntity):
    """A file of a OneDrive or SharePoint document library."""


def drive_items(src: GraphSource, drive_id: str, state: dict, *, root: str = "root", root_name: str | None = None,
                crumbs_prefix: list[Breadcrumb] | None = None, entity_cls=OneDriveFileEntity,
                extra_fields: dict | None = None, extensions: tuple[str, ...] = ()) -> Iterator[BaseEntity]:
    """Run one delta round of a drive (or of one folder of it) and yield its files.

    `state` is this drive's part of the cursor, updated in place: `delta_link`, `folders`
    ({id: [name, parent id]}), and after the round `full` (bool) and `deleted` (item ids).
    `root_name` names the round's root folder in breadcrumbs (None: left out of them).
    `extensions` (lower case, with the dot) keeps only the files whose names end so (empty: all).
    """
    folders: dict[str, list] = dict(state.get("folders") or {})
    round_ = DeltaRound(src.http, f"/drives/{drive_id}/{root}/delta", delta_link=state.get("delta_link"))
    deleted: list[str] = []
    files: list[dict] = []
    root_id = None
    for item in round_:
        if is_removed(item):
            deleted.append(item["id"])
            folders.pop(item["id"], None)
            continue
        parent = (item.get("parentReference") or {}).get("id")
        if "root" in item or (root_id is None and not parent):
            root_id = item["id"]
            folders[item["id"]] = [root_name, None]
        elif "folder" in item:
            folders[item["id"]] = [item.get("name", ""), parent]
        elif "file" in item and (not extensions or item.get("name", "").lower().endswith(extensions)):
            files.append(item)
    state.update(delta_link=round_.delta_link, folders=folders, full=round_.full, deleted=deleted)
    for item in files:  # after the round: every folder of the round is known for breadcrumbs
        yield _file_entity(src, drive_id, item, folders, crumbs_prefix or [], entity_cls, extra_fields or {})


def graph_group_memberships(src: GraphSource) -> list[AccessMembership]:
    """Members of every group of the tenant (`group:<id>` ∋ `user:<email>` | `group:<id>`); [] without the right."""
    try:
        groups = list(pages(src.http, "/groups", params={"$select": "id,displayName"}))
    except HttpError as exc:
        if exc.status not in (400, 403):
            raise
        logger.info("%s: groups cannot be listed (HTTP %s): no group member is mirrored", src.short_name, exc.status)
        return []
    memberships = []
    for group in groups:
        for member in pages(src.http, f"/groups/{group['id']}/members",
                            params={"$select": "id,mail,userPrincipalName"}):
            kind = member.get("@odata.type", "")
            if kind == "#microsoft.graph.group":
                memberships.append(AccessMembership(group["id"], f"group:{member['id']}"))
            elif kind == "#microsoft.graph.user":
                email = member.get("mail") or member.get("userPrincipalName")
                if email and "@" in email:
                    memberships.append(AccessMembership(group["id"], f"user:{email.lower()}"))
    return memberships


def _identity_email(identity: dict) -> str:
    email = identity.get("email") or ""
    if not email and "|" in (identity.get("loginName") or ""):
        email = identity["loginName"].rsplit("|", 1)[-1]  # i:0#.f|membership|meganb@contoso.com
    return email.lower() if "@" in email else ""


def item_access(src: GraphSource, drive_id: str, item: dict) -> dict:
    """Entity access of a drive item from its permissions (see the module docstring)."""
    if int(item.get("size") or 0) > max_file_bytes():
        return {"access_viewers": [], "access_is_public": False}  # skipped by size: never indexed
    viewers, public = set(), False
    for permission in pages(src.http, f"/drives/{drive_id}/items/{item['id']}/permissions"):
        if (permission.get("link") or {}).get("scope") in ("anonymous", "organization"):
            public = True
        granted = [permission.get("grantedToV2") or {}] + list(permission.get("grantedToIdentitiesV2") or [])
        for identity in granted:
            for key in ("user", "siteUser"):
                email = _identity_email(identity.get(key) or {})
                if email:
                    viewers.add(f"user:{email}")
            if (identity.get("group") or {}).get("id"):
                viewers.add(f"group:{identity['group']['id']}")
    return {"access_viewers": sorted(viewers), "access_is_public": public}


def _breadcrumbs(folders: dict, parent_id: str | None) -> list[Breadcrumb]:
    chain, seen = [], set()
    while parent_id and parent_id in folders and parent_id not in seen:
        seen.add(parent_id)
        name, up = folders[parent_id]
        if name is not None:
            chain.append(Breadcrumb(parent_id, name, "OneDriveFolder"))
        parent_id = up
    return list(reversed(chain))


def _file_entity(src, drive_id: str, item: dict, folders: dict, prefix: list[Breadcrumb], entity_cls,
                 extra_fields: dict) -> BaseEntity:
    parent = item.get("parentReference") or {}
    crumbs = prefix + _breadcrumbs(folders, parent.get("id"))
    item_drive = parent.get("driveId") or drive_id
    name = item.get("name", "")
    who = ((item.get("lastModifiedBy") or {}).get("user") or {}).get("displayName", "")
    return entity_cls(
        entity_id=item["id"], name=name, breadcrumbs=crumbs,
        created_at=graph_time(item.get("createdDateTime")), updated_at=graph_time(item.get("lastModifiedDateTime")),
        web_url=item.get("webUrl", ""), size=int(item.get("size") or 0),
        content_tag=item.get("cTag") or item.get("eTag") or "", mime_type=(item.get("file") or {}).get("mimeType", ""),
        fetch=download_fetcher(src.http, f"/drives/{item_drive}/items/{item['id']}/content", name),
        raw_source_fields={"drive_id": item_drive, "mime_type": (item.get("file") or {}).get("mimeType"),
                           "size": item.get("size"), "last_modified_by": who,
                           "folder_path": "/".join(b.name for b in crumbs), **extra_fields},
        **item_access(src, item_drive, item),
    )


# What every source reading the user's OneDrive declares alike (OneDrive, and Word and PowerPoint).
ONEDRIVE_CAPABILITIES = dict(
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(ConfigField("folder", "Folder", "string",
                               "Only this folder and below, as a path from the drive's root (e.g. /Documents)."),),
    supports_access_control=True,
    mirrored_permissions=GRAPH_MIRRORED_PERMISSIONS,
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)


@source(
    name="OneDrive",
    short_name="onedrive",
    notifications=OneDriveNotifications,
    description="Files of your OneDrive (PDF, Word, PowerPoint, Excel, text...), kept fresh with delta queries.",
    labels=("File storage",),
    entity_types=(OneDriveFileEntity,),
    **ONEDRIVE_CAPABILITIES,
)
class OneDriveSource(GraphSource):
    """See the module docstring. A subclass narrows it to some file types with `only_extensions`
    and names its files with `entity_class`."""

    only_extensions: tuple[str, ...] = ()
    entity_class: type[GraphFileEntity] = OneDriveFileEntity

    def generate_access_memberships(self) -> list[AccessMembership]:
        """The tenant's groups and their members (see graph_group_memberships)."""
        return graph_group_memberships(self)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._state = dict((cursor or {}).get("drive") or {})
        drive = self.http.get_json("/me/drive", params={"$select": "id,name,webUrl"})
        if self._state.get("drive_id") not in (None, drive["id"]):
            self._state = {}  # another drive than last time: start over
        self._state["drive_id"] = drive["id"]
        folder = (self.config.get("folder") or "").strip("/")
        root = f"root:/{quote(folder)}:" if folder else "root"
        yield from drive_items(self, drive["id"], self._state, root=root,
                               root_name=folder.rsplit("/", 1)[-1] if folder else (drive.get("name") or "OneDrive"),
                               entity_cls=self.entity_class, extensions=self.only_extensions)

    def is_full_listing(self) -> bool:
        return bool(self._state.get("full"))

    def deleted_entity_ids(self) -> list[str]:
        return list(self._state.get("deleted") or [])

    def next_cursor(self) -> dict:
        state = {k: v for k, v in self._state.items() if k in ("drive_id", "delta_link", "folders")}
        return {"drive": state} if state.get("delta_link") else {}
