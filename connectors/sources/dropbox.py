"""Dropbox: the files of a Dropbox (or of one folder of it).

Auth: OAuth 2 with refresh (offline access: `token_access_type=offline` in the provider entry;
Dropbox does not rotate refresh tokens). API v2: RPC endpoints on api.dropboxapi.com (POST
with JSON, read-only calls sent as idempotent), content on content.dropboxapi.com.

- Listing: `files/list_folder` (recursive) then `files/list_folder/continue` while `has_more`.
  Folders are the breadcrumbs of their files. Files are downloaded with `files/download`
  (GET with the `Dropbox-API-Arg` header, which Dropbox accepts on content-download
  endpoints); unsupported types, files over AIRWEAVE_MAX_FILE_BYTES and export-only files
  (Paper docs, `is_downloadable: false`) are skipped entities with the reason.
- Incremental: the listing's final `cursor` is saved; later runs call `list_folder/continue`
  with it and receive only the changes. A `deleted` entry (which carries only a path) deletes
  the file at that path; a deleted *folder* (known from the folder paths kept in the cursor)
  starts a full listing, since its files are not reported one by one. A `reset` error (409)
  starts a full listing too.

Access (`supports_access_control`): a file outside any shared folder is visible to the account's
owner (`users/get_current_account`, `user:<email>`); a file inside a shared folder (its
`sharing_info.parent_shared_folder_id`) carries `group:shared_folder:<id>`, whose members are
listed at each sync: `sharing/list_folders` (+ `/continue`), then `sharing/list_folder_members`
(+ `/continue`) of each: users as `user:<email>`, Dropbox team groups as the nested group
`group:team_group:<group id>`. A team group's own members can be listed only with a team
administrator's app (`team/groups/members/list`), so they are not mirrored: those people do not
see the files through the group. Pending invitees do not count. Files shared one by one (file
members) and shared links are not mirrored: such files stay visible to the owner and their
folder's members only.

Entities: DropboxFileEntity, `entity_id` = the file's `path_lower` (the key Dropbox's deletion
entries carry; a rename or move is a deletion plus a new file). Cursor:
`{"cursor": "...", "path": "<config path>", "folders": ["/path_lower", ...]}`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterator
from urllib.parse import quote

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, FileEntity, SourceError, UnreadableEntity
from connectors.http import HttpError
from connectors.notifications.vendors import DropboxNotifications
from connectors.registry import source
from connectors.sources._cloud_files import FileFetcher, RestartListing, changes_or_listing, extension_of
from connectors.sources._saas import parse_time

CONTENT_URL = "https://content.dropboxapi.com/2/files/download"


@dataclass
class DropboxFileEntity(FileEntity):
    """A file of Dropbox."""

    dropbox_id: str = ""
    rev: str = ""
    content_hash_dropbox: str = ""


@source(
    name="Dropbox",
    short_name="dropbox",
    notifications=DropboxNotifications,
    description="Files of a Dropbox (PDF, Office, text, ...), with folders as breadcrumbs.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("path", "Folder", "string",
                    "The folder to index, e.g. /Projects; the whole Dropbox when empty.", default=""),
    ),
    labels=("File Storage",),
    entity_types=(DropboxFileEntity,),
    supports_access_control=True,
    mirrored_permissions=(("the account's own files: its owner", True),
                          ("shared folders: their members", True),
                          ("team groups on shared folders, as nested groups", True),
                          ("team groups' members (needs a team administrator's app)", False),
                          ("files shared one by one, shared links", False),
                          ("pending invitations", False)),
    rate_limit_level="connection",
    rate_limit="10/second",
    base_url="https://api.dropboxapi.com/2",
)
class DropboxSource(BaseSource):
    """Lists and downloads Dropbox files; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        path = (out.get("path") or "").strip()
        if path in ("/", ""):
            path = ""
        elif not path.startswith("/"):
            raise ValueError("config field 'path' must start with / (e.g. /Projects), or be empty for the whole Dropbox")
        out["path"] = path.rstrip("/")
        return out

    # --- access -------------------------------------------------------------------------

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Members of every shared folder the account belongs to (users and team groups)."""
        memberships = []
        for folder in self._listed("sharing/list_folders", {"limit": 1000}, "entries"):
            group = f"shared_folder:{folder['shared_folder_id']}"
            body = self._rpc("sharing/list_folder_members", {"shared_folder_id": folder["shared_folder_id"],
                                                             "limit": 1000})
            while True:
                for member in body.get("users") or []:
                    email = (member.get("user") or {}).get("email")
                    if email:
                        memberships.append(AccessMembership(group, f"user:{email.lower()}"))
                for member in body.get("groups") or []:
                    group_id = (member.get("group") or {}).get("group_id")
                    if group_id:
                        memberships.append(AccessMembership(group, f"group:team_group:{group_id}"))
                if not body.get("cursor"):
                    break
                body = self._rpc("sharing/list_folder_members/continue", {"cursor": body["cursor"]})
        return memberships

    def _listed(self, endpoint: str, body: dict, key: str) -> Iterator[dict]:
        page = self._rpc(endpoint, body)
        while True:
            yield from page.get(key) or []
            if not page.get("cursor"):
                return
            page = self._rpc(f"{endpoint}/continue", {"cursor": page["cursor"]})

    def _owner(self) -> str:
        if getattr(self, "_me", None) is None:
            self._me = (self.http.post("users/get_current_account", idempotent=True).json().get("email") or "").lower()
        return self._me

    def _access(self, entry: dict) -> dict:
        """The owner, and the members of the shared folder the file is in (see the module docstring)."""
        viewers = [f"user:{self._owner()}"] if self._owner() else []
        shared = (entry.get("sharing_info") or {}).get("parent_shared_folder_id")
        if shared:
            viewers.append(f"group:shared_folder:{shared}")
        return {"access_viewers": sorted(viewers), "access_is_public": False}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._fetcher = FileFetcher(self.http)
        self._deleted: list[str] = []
        cursor = cursor or {}
        path = self.config.get("path", "")
        saved = cursor.get("cursor") if cursor.get("path", "") == path else None
        self._folders: set[str] = set(cursor.get("folders") or []) if saved else set()
        self._full = not saved

        def reset():
            self._full, self._deleted, self._folders = True, [], set()

        yield from changes_or_listing(self._changes(saved) if saved else None, lambda: self._listing(path),
                                      reset=reset, source="dropbox")

    def _changes(self, saved: str) -> Iterator[BaseEntity]:
        yield from self._pages(self._continue(saved), incremental=True)

    def _listing(self, path: str) -> Iterator[BaseEntity]:
        first = self._rpc("files/list_folder", {"path": path, "recursive": True, "include_deleted": False,
                                                "include_non_downloadable_files": True, "limit": 2000})
        yield from self._pages(first, incremental=False)

    def _rpc(self, endpoint: str, body: dict) -> dict:
        try:
            return self.http.post(endpoint, json=body, idempotent=True).json()
        except HttpError as exc:
            if exc.status == 409:
                summary = _error_summary(exc)
                if summary.startswith("reset"):
                    raise RestartListing("the saved cursor was reset by Dropbox") from None
                if "not_found" in summary:
                    raise SourceError(f"Dropbox folder '{body.get('path')}' does not exist", "config_error") from None
            raise

    def _continue(self, cursor: str) -> dict:
        return self._rpc("files/list_folder/continue", {"cursor": cursor})

    def _pages(self, body: dict, *, incremental: bool) -> Iterator[BaseEntity]:
        seen = set()
        while True:
            for entry in body.get("entries") or []:
                tag = entry.get(".tag")
                if tag == "folder":
                    self._folders.add(entry["path_lower"])
                elif tag == "deleted":
                    if incremental:
                        self._deleted_entry(entry["path_lower"])
                elif tag == "file":
                    yield self._entity(entry)
            self._cursor = body.get("cursor")
            if not body.get("has_more"):
                return
            if self._cursor in seen:
                raise SourceError("pagination loop: Dropbox repeated a cursor", "pagination_loop")
            seen.add(self._cursor)
            body = self._continue(self._cursor)

    def _deleted_entry(self, path_lower: str) -> None:
        if path_lower in self._folders:
            raise RestartListing(f"the folder {path_lower} was deleted or moved")
        self._deleted.append(path_lower)

    def _entity(self, entry: dict) -> BaseEntity:
        name = entry["name"]
        display = entry.get("path_display") or entry["path_lower"]
        size = int(entry.get("size") or 0)
        export_only = entry.get("is_downloadable") is False
        path = self._fetcher.fetch_named(
            entry["path_lower"], name, CONTENT_URL, size=size,
            reason="unsupported file type: export-only (not downloadable)" if export_only else None,
            headers={"Dropbox-API-Arg": json.dumps({"path": entry.get("id") or entry["path_lower"]})})
        if isinstance(path, UnreadableEntity):
            return path
        parent = str(PurePosixPath(display).parent)
        return DropboxFileEntity(
            entity_id=entry["path_lower"], name=name, breadcrumbs=_breadcrumbs(display),
            created_at=parse_time(entry.get("client_modified")), updated_at=parse_time(entry.get("server_modified")),
            web_url=f"https://www.dropbox.com/home{quote(parent if parent != '/' else '')}?preview={quote(name)}",
            path=path, size=size, dropbox_id=entry.get("id") or "",
            rev=entry.get("rev") or "", content_hash_dropbox=entry.get("content_hash") or "",
            raw_source_fields={"path": display, "dropbox_id": entry.get("id"), "size": size,
                               "content_hash": entry.get("content_hash"), "rev": entry.get("rev"),
                               "extension": extension_of(name)},
            **self._access(entry),
        )

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        if not getattr(self, "_cursor", None):
            return {}
        return {"cursor": self._cursor, "path": self.config.get("path", ""), "folders": sorted(self._folders)}


def _error_summary(exc: HttpError) -> str:
    try:
        return json.loads(exc.body or "{}").get("error_summary") or ""
    except (ValueError, AttributeError):
        return ""


def _breadcrumbs(path_display: str) -> list[Breadcrumb]:
    crumbs, parts = [], PurePosixPath(path_display).parts[1:-1]
    for depth in range(len(parts)):
        folder = "/" + "/".join(parts[: depth + 1])
        crumbs.append(Breadcrumb(folder.lower(), parts[depth], "DropboxFolder"))
    return crumbs
