"""Google Drive: the files of a user's Drive (and, optionally, of the shared drives they belong to).

Auth: OAuth 2 with refresh (`drive.readonly`; browser flow, bring-your-own client, or an injected
token). API: Drive v3.

- Listing: `GET /drive/v3/files?q=trashed = false` paginated by `pageToken`/`nextPageToken`,
  `corpora=allDrives` when shared drives are included. Folders are not entities: they are the
  breadcrumbs of the files inside them (the parent chain up to "My Drive" or the shared drive),
  read from the listing or, for folders not seen yet, with `files.get` (cached per run).
- Content: Google Docs and Slides are exported with `files.export` as text/plain, Sheets as
  XLSX (every sheet, read by the XLSX converter); other Google types (forms, drawings, maps,
  shortcuts) are skipped with a reason. Other files are downloaded with `alt=media`, unless
  their extension has no converter or their size is over AIRWEAVE_MAX_FILE_BYTES (then a
  skipped entity with the reason, without a download).
- Incremental: the first run takes `changes.getStartPageToken` *before* listing, so nothing
  changed during the listing is missed; later runs read `changes.list` from the saved token
  (`removed` or trashed files become deletions) and save `newStartPageToken`. A token Drive no
  longer accepts (HTTP 410, or 400/404 naming the page token) starts a full listing.
- Access (`supports_access_control`): each file's permissions become `access_viewers`
  (`user:<email>`, `group:<email>` — a Google group's address is its id); an `anyone`
  permission, or a `domain` permission for the connected user's own domain (from `about`),
  opens the file to the organization; another domain's permission lets nobody in. Drive lists
  permissions only to users who may share a file: for a shared-drive file without them, the
  shared drive's members are used (`permissions.list` on the drive, once per drive); failing
  that, the owners and the connected user. Group memberships are not listed (that needs the
  Admin SDK), so a file shared with a group alone is closed to the group's members.

Entities: GoogleDriveFileEntity, `entity_id` = the Drive file id. Cursor:
`{"start_page_token": "...", "shared_drives": bool}`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, FileEntity, UnreadableEntity
from connectors.http import HttpError
from connectors.notifications.vendors import GoogleDriveNotifications
from connectors.registry import source
from connectors.sources._cloud_files import FileFetcher, unsupported_reason
from connectors.sources._google import google_json
from connectors.sources._saas import parse_time

logger = logging.getLogger(__name__)

FOLDER = "application/vnd.google-apps.folder"
# Google-native types → (export MIME type, file suffix the converters read).
EXPORTS = {
    "application/vnd.google-apps.document": ("text/plain", ".txt"),
    "application/vnd.google-apps.presentation": ("text/plain", ".txt"),
    "application/vnd.google-apps.spreadsheet": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".xlsx"),
}
FILE_FIELDS = ("id,name,mimeType,parents,driveId,createdTime,modifiedTime,webViewLink,size,md5Checksum,"
               "version,description,starred,trashed,ownedByMe,fileExtension,"
               "owners(emailAddress,displayName),lastModifyingUser(emailAddress,displayName),"
               "permissions(id,type,role,emailAddress,domain,deleted)")
PERMISSION_FIELDS = "nextPageToken,permissions(id,type,role,emailAddress,domain,deleted)"
MAX_FOLDER_DEPTH = 64
PAGE_SIZE = 100


@dataclass
class GoogleDriveFileEntity(FileEntity):
    """A file of Google Drive (a Google Doc, Sheet or Slides deck exported, or an uploaded file)."""

    mime_type: str = ""
    drive_id: str = ""
    owners: list[str] = field(default_factory=list)
    description: str = ""


# What every source reading Drive declares alike (Google Drive, and Docs and Slides on their own).
DRIVE_CAPABILITIES = dict(
    mirrored_permissions=(("file permissions: users and groups", True),
                          ("anyone links and the connected user's domain: the organization", True),
                          ("shared drive members when a file lists no permissions", True),
                          ("Google group members (needs the Admin SDK)", False)),
    notifications=GoogleDriveNotifications,
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("include_shared_drives", "Include shared drives", "boolean",
                    "Also index the shared drives the user is a member of.", default=False),
        ConfigField("owned_only", "Only files I own", "boolean",
                    "Leave out files others shared with the user.", default=False),
    ),
    supports_access_control=True,
    # Drive's default quota: 12,000 queries a minute per user (and per project).
    rate_limit_level="connection",
    rate_limit="10/second",
    base_url="https://www.googleapis.com/drive/v3",
)


@source(
    name="Google Drive",
    short_name="google_drive",
    description="Files of Google Drive: Docs, Sheets and Slides exported to text, and uploaded files "
                "(PDF, Office, text, ...), with folders as breadcrumbs and Drive sharing as access control.",
    labels=("File Storage",),
    entity_types=(GoogleDriveFileEntity,),
    **DRIVE_CAPABILITIES,
)
class GoogleDriveSource(BaseSource):
    """Lists, exports and downloads Drive files; see the module docstring.

    A subclass narrows it to some Drive types with `only_mime_types` (its listing asks Drive for
    those alone, its changes keep those alone) and names its files with `entity_class`.
    """

    only_mime_types: tuple[str, ...] = ()
    entity_class: type[GoogleDriveFileEntity] = GoogleDriveFileEntity

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._fetcher = FileFetcher(self.http)
        self._folders: dict[str, dict | None] = {}
        self._drive_viewers: dict[str, tuple[list[str], bool] | None] = {}
        self._deleted: list[str] = []
        self._me = None
        shared = bool(self.config.get("include_shared_drives"))
        token = (cursor or {}).get("start_page_token")
        if token and (cursor or {}).get("shared_drives", False) != shared:
            token = None  # the scope changed: list everything again
        self._full = not token
        if token:
            try:
                yield from self._changes(token)
                return
            except _TokenExpired:
                logger.info("google_drive: the saved changes token is no longer valid; listing everything")
                self._full = True
        self._start_token = self._start_page_token()
        yield from self._listing()

    # --- listing and changes -------------------------------------------------------------

    def _common_params(self) -> dict:
        params = {"supportsAllDrives": "true"}
        if self.config.get("include_shared_drives"):
            params["includeItemsFromAllDrives"] = "true"
        return params

    def _start_page_token(self) -> str:
        body = google_json(self, "changes/startPageToken", params=self._common_params())
        return body["startPageToken"]

    def _list(self, query: str, fields: str) -> Iterator[dict]:
        params = {**self._common_params(), "q": query, "pageSize": PAGE_SIZE,
                  "fields": f"nextPageToken,files({fields})"}
        if self.config.get("include_shared_drives"):
            params["corpora"] = "allDrives"
        page_token, seen = None, set()
        while True:
            body = google_json(self, "files", params={**params, **({"pageToken": page_token} if page_token else {})})
            yield from body.get("files") or []
            page_token = body.get("nextPageToken")
            if not page_token or page_token in seen:
                return
            seen.add(page_token)

    def _listing(self) -> Iterator[BaseEntity]:
        owned = " and 'me' in owners" if self.config.get("owned_only") else ""
        for folder in self._list(f"trashed = false and mimeType = '{FOLDER}'", "id,name,parents,driveId"):
            self._folders[folder["id"]] = folder
        types = " or ".join(f"mimeType = '{mime}'" for mime in self.only_mime_types)
        kinds = f" and ({types})" if types else f" and mimeType != '{FOLDER}'"
        for item in self._list(f"trashed = false{kinds}{owned}", FILE_FIELDS):
            yield self._entity(item)

    def _changes(self, token: str) -> Iterator[BaseEntity]:
        params = {**self._common_params(), "pageSize": PAGE_SIZE, "includeRemoved": "true", "spaces": "drive",
                  "fields": f"nextPageToken,newStartPageToken,changes(changeType,removed,fileId,time,file({FILE_FIELDS}))"}
        seen = set()
        while True:
            try:
                body = google_json(self, "changes", params={**params, "pageToken": token})
            except HttpError as exc:
                if exc.status == 410 or (exc.status in (400, 404) and "token" in (exc.body or "").lower()):
                    raise _TokenExpired() from None
                raise
            for change in body.get("changes") or []:
                if change.get("changeType", "file") != "file":
                    continue  # a shared drive itself changed
                item = change.get("file") or {}
                if change.get("removed") or item.get("trashed") or not self._in_scope(item):
                    self._deleted.append(change["fileId"])
                    continue
                if item.get("mimeType") == FOLDER:
                    self._folders[item["id"]] = item
                    continue
                if self.only_mime_types and item.get("mimeType") not in self.only_mime_types:
                    continue  # another kind of file than this source indexes
                yield self._entity(item)
            if body.get("newStartPageToken"):
                self._start_token = body["newStartPageToken"]
                return
            token = body.get("nextPageToken")
            if not token or token in seen:
                self._start_token = token
                return
            seen.add(token)

    def _in_scope(self, item: dict) -> bool:
        if item.get("driveId") and not self.config.get("include_shared_drives"):
            return False
        if self.config.get("owned_only") and not item.get("ownedByMe", True):
            return False
        return True

    # --- one file ------------------------------------------------------------------------

    def _entity(self, item: dict) -> BaseEntity:
        mime = item.get("mimeType") or ""
        name = item.get("name") or item["id"]
        size = int(item["size"]) if str(item.get("size") or "").isdigit() else None
        path, reason, suffix = None, None, ""
        if mime in EXPORTS:
            export_type, suffix = EXPORTS[mime]
            path, reason = self._fetcher.fetch(f"files/{item['id']}/export", suffix=suffix,
                                               params={"mimeType": export_type})
            if reason and "403" in reason:
                reason = "export refused: HTTP 403 (over Drive's 10 MB export limit, or not exportable)"
        elif mime.startswith("application/vnd.google-apps."):
            reason = f"unsupported file type: {mime.rsplit('.', 1)[-1]} (a Google type without a text export)"
        else:
            reason = unsupported_reason(name)
            if reason is None:
                suffix = "." + name.rsplit(".", 1)[-1].lower()
                path, reason = self._fetcher.fetch(f"files/{item['id']}", suffix=suffix, size=size,
                                                   params={"alt": "media", "supportsAllDrives": "true"})
        if reason:
            return UnreadableEntity(entity_id=item["id"], name=name, reason=reason)
        viewers, public = self._access(item)
        owners = [o.get("emailAddress") for o in item.get("owners") or [] if o.get("emailAddress")]
        modifier = (item.get("lastModifyingUser") or {}).get("emailAddress")
        return self.entity_class(
            entity_id=item["id"], name=name, breadcrumbs=self._breadcrumbs(item),
            created_at=parse_time(item.get("createdTime")), updated_at=parse_time(item.get("modifiedTime")),
            web_url=item.get("webViewLink") or f"https://drive.google.com/file/d/{item['id']}/view",
            url=f"https://www.googleapis.com/drive/v3/files/{item['id']}",
            path=path, size=size or 0, mime_type=mime,
            drive_id=item.get("driveId") or "", owners=owners, description=item.get("description") or "",
            access_viewers=viewers, access_is_public=public,
            raw_source_fields={"mime_type": mime, "owners": owners, "last_modified_by": modifier,
                               "drive_id": item.get("driveId"), "size": size, "md5_checksum": item.get("md5Checksum"),
                               "starred": bool(item.get("starred")), "description": item.get("description") or "",
                               "file_extension": item.get("fileExtension") or ""},
        )

    def _breadcrumbs(self, item: dict) -> list[Breadcrumb]:
        chain: list[Breadcrumb] = []
        parents = item.get("parents") or []
        seen: set[str] = set()
        while parents and len(chain) < MAX_FOLDER_DEPTH:
            folder_id = parents[0]
            if folder_id in seen:
                break
            seen.add(folder_id)
            folder = self._folder(folder_id)
            if folder is None:
                break
            chain.append(Breadcrumb(folder_id, folder.get("name") or folder_id, "GoogleDriveFolder"))
            parents = folder.get("parents") or []
        return list(reversed(chain))

    def _folder(self, folder_id: str) -> dict | None:
        if folder_id not in self._folders:
            try:
                self._folders[folder_id] = google_json(self, f"files/{folder_id}", params={
                    "fields": "id,name,parents,driveId", "supportsAllDrives": "true"})
            except HttpError as exc:
                if exc.status not in (403, 404):
                    raise
                self._folders[folder_id] = None  # not visible to this user: the chain stops here
        return self._folders[folder_id]

    # --- access --------------------------------------------------------------------------

    def _access(self, item: dict) -> tuple[list[str], bool]:
        """(viewers, is public) of a file from its permissions; see the module docstring."""
        permissions = item.get("permissions")
        if permissions is not None:
            return self._principals(permissions)
        if item.get("driveId"):
            drive = self._drive_access(item["driveId"])
            if drive is not None:
                return drive
        viewers = [f"user:{o['emailAddress']}" for o in item.get("owners") or [] if o.get("emailAddress")]
        me = self._my_email()
        if me:
            viewers.append(f"user:{me}")
        return sorted(set(viewers)), False

    def _drive_access(self, drive_id: str) -> tuple[list[str], bool] | None:
        if drive_id not in self._drive_viewers:
            permissions: list[dict] = []
            params = {"supportsAllDrives": "true", "fields": PERMISSION_FIELDS, "pageSize": 100}
            try:
                while True:
                    body = google_json(self, f"files/{drive_id}/permissions", params=params)
                    permissions.extend(body.get("permissions") or [])
                    if not body.get("nextPageToken"):
                        break
                    params = {**params, "pageToken": body["nextPageToken"]}
                self._drive_viewers[drive_id] = self._principals(permissions)
            except HttpError as exc:
                if exc.status not in (403, 404):
                    raise
                self._drive_viewers[drive_id] = None
        return self._drive_viewers[drive_id]

    def _principals(self, permissions: list[dict]) -> tuple[list[str], bool]:
        """(viewers, is public) of a permission list: users and groups; `anyone` and the connected user's domain
        open it."""
        viewers, public = set(), False
        for permission in permissions:
            if permission.get("deleted"):
                continue
            kind, email = permission.get("type"), permission.get("emailAddress")
            if kind == "anyone":
                public = True
            elif kind == "domain":
                domain = (permission.get("domain") or "").lower()
                public = public or (bool(domain) and domain == self._my_email().rpartition("@")[2].lower())
            elif kind == "user" and email:
                viewers.add(f"user:{email.lower()}")
            elif kind == "group" and email:
                viewers.add(f"group:{email.lower()}")
        return sorted(viewers), public

    def _my_email(self) -> str:
        if self._me is None:
            about = google_json(self, "about", params={"fields": "user(emailAddress,displayName)"})
            self._me = (about.get("user") or {}).get("emailAddress") or ""
        return self._me

    # --- the contract --------------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        if not getattr(self, "_start_token", None):
            return {}
        return {"start_page_token": self._start_token, "shared_drives": bool(self.config.get("include_shared_drives"))}


class _TokenExpired(Exception):
    """The saved changes page token is no longer accepted."""
