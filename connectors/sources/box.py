"""Box: the files below a Box folder (all files by default).

Auth: OAuth 2 with *rotating* refresh tokens: every refresh answers a new refresh token and
spends the old one. The HTTP client's OAuth2Auth saves the new one (encrypted, under a row
lock) before the new access token is used, so a crash or a concurrent worker never leaves the
connection with a spent token. API: Box Content API 2.0.

- Listing: `GET folders/{id}/items` with marker pagination (`usemarker=true`, `next_marker`),
  folders walked breadth first; folders are the breadcrumbs of their files. Files are
  downloaded from `files/{id}/content` (Box redirects to a signed dl.boxcloud.com URL; the
  bearer token is not sent there). Unsupported types and files over AIRWEAVE_MAX_FILE_BYTES
  are skipped entities with the reason.
- Incremental: the first run takes `events?stream_position=now` *before* listing; later runs
  read the `changes` event stream from the saved position. A file event fetches the file
  again (404, trashed, or moved out of the folder → a deletion; ITEM_TRASH → a deletion); an
  event on a folder (moved, renamed, trashed, restored) starts a full listing, since its
  files are not reported one by one.

Access (`supports_access_control`): a file is visible to its owner (`owned_by.login`) and to the
accepted collaborators of the file (`GET files/{id}/collaborations`) and of every folder above it
(`GET folders/{id}/collaborations`, once per folder and run; Box collaborations flow down the
tree): users as `user:<login>`, groups as `group:<group id>`. A shared link with `access` `open`
(anyone with the link) or `company` (everyone in the enterprise) opens the file to the
organization. Group members are listed at each sync from `GET groups` and
`GET groups/{id}/memberships` (offset pages); Box lets only admins and group managers list an
enterprise's groups, so without that right (HTTP 403) no group member is mirrored and a file
shared with a group alone stays closed to its members (logged). Pending collaborations do not
count.

Entities: BoxFileEntity, `entity_id` = the Box file id. Cursor:
`{"stream_position": "...", "folder_id": "..."}`.
"""
from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Iterator

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, FileEntity, SourceError, UnreadableEntity
from connectors.http import HttpError
from connectors.notifications.vendors import BoxNotifications
from connectors.registry import source
from connectors.sources._cloud_files import FileFetcher, RestartListing, changes_or_listing
from connectors.sources._saas import parse_time

logger = logging.getLogger(__name__)
FILE_FIELDS = ("type,id,name,size,sha1,etag,sequence_id,created_at,modified_at,content_modified_at,description,"
               "extension,item_status,path_collection,owned_by,modified_by,shared_link,parent")
FOLDER_EVENTS_THAT_MOVE_FILES = frozenset({"ITEM_TRASH", "ITEM_MOVE", "ITEM_RENAME", "ITEM_UNDELETE_VIA_TRASH",
                                           "ITEM_COPY"})
FILE_GONE_EVENTS = frozenset({"ITEM_TRASH"})
PAGE_SIZE = 1000


@dataclass
class BoxFileEntity(FileEntity):
    """A file of Box."""

    sha1: str = ""
    owner: str = ""


@source(
    name="Box",
    short_name="box",
    notifications=BoxNotifications,
    description="Files stored in Box (PDF, Office, text, ...), with folders as breadcrumbs.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_rotating_refresh",
    config_fields=(
        ConfigField("folder_id", "Folder id", "string",
                    "The Box folder to index (its id is the last part of its URL); 0 = All Files.", default="0"),
    ),
    labels=("File Storage",),
    entity_types=(BoxFileEntity,),
    supports_access_control=True,
    mirrored_permissions=(("owner", True), ("file collaborations", True),
                          ("folder collaborations, inherited down the tree", True),
                          ("group collaborations with their members", True),
                          ("shared links (open, company): the organization", True),
                          ("group members without an admin's or group manager's token", False),
                          ("pending invitations", False)),
    # Box: 1,000 API requests a minute per user.
    rate_limit_level="connection",
    rate_limit="15/second",
    base_url="https://api.box.com/2.0",
)
class BoxSource(BaseSource):
    """Walks Box folders and downloads files; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        folder = str(out.get("folder_id") or "0").strip()
        if not folder.isdigit():
            raise ValueError("config field 'folder_id' must be a Box folder id (digits, e.g. 0 for All Files)")
        out["folder_id"] = folder
        return out

    # --- access -------------------------------------------------------------------------

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Every group's members (`group:<id>` ∋ `user:<login>`); [] when this user may not list groups."""
        memberships = []
        try:
            groups = list(self._offset_pages("groups"))
        except HttpError as exc:
            if exc.status != 403:
                raise
            logger.info("box: this user may not list the enterprise's groups (HTTP 403): no group member is mirrored")
            return []
        for group in groups:
            for membership in self._offset_pages(f"groups/{group['id']}/memberships"):
                login = (membership.get("user") or {}).get("login")
                if login:
                    memberships.append(AccessMembership(str(group["id"]), f"user:{login.lower()}"))
        return memberships

    def _offset_pages(self, url: str) -> Iterator[dict]:
        offset = 0
        while True:
            body = self.http.get_json(url, params={"limit": PAGE_SIZE, "offset": offset})
            entries = body.get("entries") or []
            yield from entries
            offset += len(entries)
            if not entries or offset >= int(body.get("total_count") or 0):
                return

    def _collaborators(self, kind: str, item_id: str) -> set[str]:
        """Principals of the accepted collaborations on one file or folder (folders cached per run)."""
        key = (kind, item_id)
        if kind == "folders" and key in self._collaborations:
            return self._collaborations[key]
        principals, marker = set(), None
        while True:
            params = {"limit": PAGE_SIZE, **({"marker": marker} if marker else {})}
            try:
                body = self.http.get_json(f"{kind}/{item_id}/collaborations", params=params)
            except HttpError as exc:
                if exc.status not in (403, 404):
                    raise
                break  # not ours to read: the item keeps its other viewers
            for collaboration in body.get("entries") or []:
                who = collaboration.get("accessible_by") or {}
                if collaboration.get("status", "accepted") != "accepted":
                    continue
                if who.get("type") == "user" and who.get("login"):
                    principals.add(f"user:{who['login'].lower()}")
                elif who.get("type") == "group" and who.get("id"):
                    principals.add(f"group:{who['id']}")
            marker = body.get("next_marker")
            if not marker:
                break
        if kind == "folders":
            self._collaborations[key] = principals
        return principals

    def _access(self, item: dict) -> dict:
        """Owner + collaborators of the file and of every folder above it; shared links open or company: public."""
        if (item.get("shared_link") or {}).get("access") in ("open", "company"):
            return {"access_viewers": [], "access_is_public": True}
        viewers = set(self._collaborators("files", item["id"]))
        for folder in (item.get("path_collection") or {}).get("entries") or []:
            if folder.get("id") and folder["id"] != "0":
                viewers |= self._collaborators("folders", folder["id"])
        owner = (item.get("owned_by") or {}).get("login")
        if owner:
            viewers.add(f"user:{owner.lower()}")
        return {"access_viewers": sorted(viewers), "access_is_public": False}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._collaborations: dict[tuple[str, str], set[str]] = {}
        self._fetcher = FileFetcher(self.http)
        self._deleted: list[str] = []
        cursor = cursor or {}
        root = self.config.get("folder_id", "0")
        position = cursor.get("stream_position") if cursor.get("folder_id", "0") == root else None
        self._full = not position

        def reset():
            self._full, self._deleted = True, []

        yield from changes_or_listing(self._events(position) if position else None, lambda: self._listing(root),
                                      reset=reset, source="box")

    def _listing(self, root: str) -> Iterator[BaseEntity]:
        """Every file below `root`, after taking the event stream's position (changes from then on)."""
        self._position = str(self.http.get_json("events", params={"stream_position": "now"})["next_stream_position"])
        yield from self._walk(root)

    # --- listing -------------------------------------------------------------------------

    def _items(self, folder_id: str) -> Iterator[dict]:
        params = {"fields": FILE_FIELDS, "limit": PAGE_SIZE, "usemarker": "true"}
        marker, seen = None, set()
        while True:
            try:
                body = self.http.get_json(f"folders/{folder_id}/items",
                                          params={**params, **({"marker": marker} if marker else {})})
            except HttpError as exc:
                if exc.status == 404 and folder_id == self.config.get("folder_id", "0"):
                    raise SourceError(f"Box folder {folder_id} does not exist or this user cannot see it",
                                      "config_error") from None
                if exc.status in (403, 404):
                    logger.info("box: folder %s is not readable (HTTP %s)", folder_id, exc.status)
                    return
                raise
            yield from body.get("entries") or []
            marker = body.get("next_marker")
            if not marker or marker in seen:
                return
            seen.add(marker)

    def _walk(self, root: str) -> Iterator[BaseEntity]:
        queue: deque[tuple[str, list[Breadcrumb]]] = deque([(root, [])])
        visited = set()
        while queue:
            folder_id, crumbs = queue.popleft()
            if folder_id in visited:
                continue
            visited.add(folder_id)
            for item in self._items(folder_id):
                if item.get("type") == "folder":
                    queue.append((item["id"], [*crumbs, Breadcrumb(item["id"], item.get("name") or item["id"],
                                                                   "BoxFolder")]))
                elif item.get("type") == "file":
                    yield self._entity(item, crumbs)

    # --- events --------------------------------------------------------------------------

    def _events(self, position: str) -> Iterator[BaseEntity]:
        files: dict[str, str] = {}
        seen_positions = {str(position)}
        while True:
            body = self.http.get_json("events", params={"stream_type": "changes", "stream_position": position,
                                                        "limit": 500})
            entries = body.get("entries") or []
            for event in entries:
                item = event.get("source") or {}
                kind, event_type = item.get("type"), event.get("event_type") or ""
                if kind == "folder" and event_type in FOLDER_EVENTS_THAT_MOVE_FILES:
                    raise RestartListing(f"folder {item.get('id')} changed ({event_type})")
                if kind == "file" and item.get("id"):
                    files[item["id"]] = event_type
            position = str(body.get("next_stream_position") or position)
            if not entries or position in seen_positions:
                break
            seen_positions.add(position)
        self._position = position
        for file_id, event_type in files.items():
            if event_type in FILE_GONE_EVENTS:
                self._deleted.append(file_id)
                continue
            item = self._file(file_id)
            if item is None:
                self._deleted.append(file_id)
                continue
            yield self._entity(item, self._crumbs(item))

    def _file(self, file_id: str) -> dict | None:
        """The file's metadata, or None when it is gone, trashed or outside the indexed folder."""
        try:
            item = self.http.get_json(f"files/{file_id}", params={"fields": FILE_FIELDS})
        except HttpError as exc:
            if exc.status in (403, 404, 410):
                return None
            raise
        if item.get("item_status", "active") != "active":
            return None
        root = self.config.get("folder_id", "0")
        ancestors = [e["id"] for e in (item.get("path_collection") or {}).get("entries") or []]
        if root != "0" and root not in ancestors:
            return None
        return item

    def _crumbs(self, item: dict) -> list[Breadcrumb]:
        entries = (item.get("path_collection") or {}).get("entries") or []
        ids = [e["id"] for e in entries]
        root = self.config.get("folder_id", "0")
        start = ids.index(root) + 1 if root in ids else 0
        return [Breadcrumb(e["id"], e.get("name") or e["id"], "BoxFolder") for e in entries[start:]]

    # --- one file ------------------------------------------------------------------------

    def _entity(self, item: dict, crumbs: list[Breadcrumb]) -> BaseEntity:
        name = item.get("name") or item["id"]
        size = int(item.get("size") or 0)
        path = self._fetcher.fetch_named(item["id"], name, f"files/{item['id']}/content", size=size)
        if isinstance(path, UnreadableEntity):
            return path
        owner = (item.get("owned_by") or {}).get("login") or ""
        return BoxFileEntity(
            entity_id=item["id"], name=name, breadcrumbs=crumbs, created_at=parse_time(item.get("created_at")),
            updated_at=parse_time(item.get("content_modified_at") or item.get("modified_at")),
            web_url=f"https://app.box.com/file/{item['id']}", url=f"https://api.box.com/2.0/files/{item['id']}",
            path=path, size=size, sha1=item.get("sha1") or "", owner=owner,
            raw_source_fields={"sha1": item.get("sha1"), "size": size, "extension": item.get("extension") or "",
                               "owner": owner, "modified_by": (item.get("modified_by") or {}).get("login") or "",
                               "description": item.get("description") or "",
                               "shared_link_access": (item.get("shared_link") or {}).get("access")},
            **self._access(item),
        )

    # --- the contract --------------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        position = getattr(self, "_position", None)
        return {"stream_position": position, "folder_id": self.config.get("folder_id", "0")} if position else {}
