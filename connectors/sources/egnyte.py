"""Egnyte: the files below a folder of an Egnyte domain, converted to text like local files.

Config: `domain` (the `acme` of acme.egnyte.com; checked, so the host is always Egnyte's),
`folder` (default `/Shared`; every file below it, folders as breadcrumbs). Auth: an access token
of the Egnyte Public API (an app's OAuth token, or one generated for a user; they do not expire),
sent as `Authorization: Bearer <token>`; a refused token (401) marks the connection `needs_reauth`.

API: `GET /pubapi/v1/fs/<folder>?list_content=true&count=100&offset=N&sort_by=name` (a folder's
`folders` and `files`, paged by `offset` until `total_count`), `GET /pubapi/v1/fs-content/<path>`
(a file's bytes, read only when its `checksum` changed). Egnyte allows 2 requests a second and
1,000 a day per token by default; over it answers 403 "Developer Over Qps" with Retry-After,
which the shared client waits out.

Entities: EgnyteFileEntity (`entity_id` the file's `group_id`, stable across renames and moves;
breadcrumbs the folders below `folder`; `web_url` `https://<domain>.egnyte.com/navigate/file/<group id>`).
Files of types no converter reads are skipped with the reason.

Incremental: every run walks the folder tree (listings carry each file's checksum, so unchanged
files are kept without a download); files no longer listed are deleted (a full listing).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterator
from urllib.parse import quote

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField, SourceError, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._msgraph import GraphFileEntity, download_fetcher
from connectors.sources._saas import SubdomainSource, parse_time

PAGE = 100


@dataclass
class EgnyteFileEntity(GraphFileEntity):
    """A file: downloaded only when its text is needed, hashed by its checksum and size."""

    file_path: str = ""


@source(
    name="Egnyte",
    short_name="egnyte",
    description="Files below a folder of an Egnyte domain, converted to text, with their folders as breadcrumbs.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "An Egnyte Public API access token.",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("domain", "Domain", "string", "The `acme` of https://acme.egnyte.com.", required=True),
        ConfigField("folder", "Folder", "string", "Index the files below this folder.", default="/Shared"),
    ),
    labels=("File Storage",),
    entity_types=(EgnyteFileEntity,),
    rate_limit_level="connection",
    rate_limit="2/second",
)
class EgnyteSource(SubdomainSource):
    """Walks the folder tree and downloads files whose checksum changed; see the module docstring."""

    SUBDOMAIN_FIELD, SUBDOMAIN_OF, SUBDOMAIN_OWNER = "domain", "egnyte.com", "the Egnyte domain's"

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        folder = "/" + out["folder"].strip().strip("/")
        if ".." in PurePosixPath(folder).parts:
            raise ValueError("config field 'folder' must be an Egnyte folder path, e.g. /Shared/Handbook")
        out["folder"] = folder
        return out

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"])

    def _folder(self, path: str) -> Iterator[dict]:
        """Every entry (folders and files) of one folder, page by page."""
        offset = 0
        while True:
            try:
                body = self.http.get_json(f"/pubapi/v1/fs{quote(path)}", params={
                    "list_content": "true", "count": PAGE, "offset": offset, "sort_by": "name"})
            except HttpError as exc:
                if exc.status == 404 and path == self.config["folder"]:
                    raise SourceError(f"folder '{path}' does not exist in {self.base_url}", "config_error") from None
                raise
            entries = [*(body.get("folders") or []), *(body.get("files") or [])]
            yield from entries
            offset += PAGE
            if not entries or offset >= int(body.get("total_count") or 0):
                return

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        root = self.config.get("folder") or "/Shared"
        stack: list[tuple[str, list[Breadcrumb]]] = [(root, [])]
        while stack:
            path, crumbs = stack.pop()
            for entry in self._folder(path):
                if entry.get("is_folder"):
                    crumb = Breadcrumb(entry.get("folder_id") or entry["path"], entry.get("name") or "", "folder")
                    stack.append((entry["path"], crumbs + [crumb]))
                else:
                    yield self._file(entry, crumbs)

    def _file(self, f: dict, crumbs: list[Breadcrumb]) -> BaseEntity:
        name, path = f.get("name") or PurePosixPath(f["path"]).name, f["path"]
        entity_id = f.get("group_id") or path
        extension = PurePosixPath(name).suffix.lower()
        if extension not in SUPPORTED_EXTENSIONS:
            return UnreadableEntity(entity_id=entity_id, name=name, breadcrumbs=crumbs,
                                    reason=f"unsupported file type: {extension or 'no extension'}")
        content_url = f"/pubapi/v1/fs-content{quote(path)}"
        return EgnyteFileEntity(
            entity_id=entity_id, name=name, breadcrumbs=crumbs, file_path=path, size=int(f.get("size") or 0),
            content_tag=f.get("checksum") or f.get("entry_id") or "", updated_at=parse_time(f.get("last_modified")),
            web_url=f"{self.base_url}/navigate/file/{entity_id}",
            fetch=download_fetcher(self.http, content_url, name),
            raw_source_fields={"path": path, "size_bytes": f.get("size"), "uploaded_by": f.get("uploaded_by"),
                               "versions": f.get("num_versions")})
