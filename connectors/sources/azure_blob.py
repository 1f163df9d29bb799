"""Azure Blob Storage: the blobs of a container, converted to text like local files.

Config: `account` (the storage account's name), `container`, `prefix` (only blobs whose name
starts with it), `endpoint_suffix` (`core.windows.net`; `core.chinacloudapi.cn`,
`core.usgovcloudapi.net` for the sovereign clouds). Auth, one of: the account key (Shared Key:
each request signed with HMAC-SHA256 as Azure Storage documents, `Authorization: SharedKey
<account>:<signature>` over `x-ms-date` and `x-ms-version`), or a SAS token (its query string
added to each request; needs the List and Read permissions). A refused signature or token (403
`AuthenticationFailed`, `AuthorizationPermissionMismatch`...; 401) marks the connection
`needs_reauth`; a missing container (404 `ContainerNotFound`) fails the job with `config_error`.

API: `GET https://<account>.blob.<suffix>/<container>?restype=container&comp=list&maxresults=5000
&prefix=&marker=` (XML `EnumerationResults`, paged by `NextMarker`), then `GET .../<container>/<blob>`
for the content of a blob that changed. Azure Storage answers 503 `ServerBusy` (and 500
`OperationTimedOut`) when it throttles, which the shared client retries with backoff.

Entities: AzureBlobEntity (`entity_id` the blob's name; breadcrumbs container → folders of the
name; `web_url` the blob's URL). Blobs of types no converter reads are skipped with the reason.

Incremental: Blob Storage has no change cursor a reader can use without the change feed, so every
run lists the container; a blob is hashed by its `Etag` and size, so unchanged blobs are kept
without a download, and blobs no longer listed are deleted (a full listing).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import PurePosixPath
from typing import Iterator
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from connectors.auth.tokens import Auth, QueryAuth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.http import HttpError, cursor_pages
from connectors.registry import source
from connectors.sources._msgraph import GraphFileEntity, download_fetcher
from connectors.sources._saas import parse_time

API_VERSION = "2023-11-03"
PAGE_SIZE = 5000
AUTH_CODES = {"AuthenticationFailed", "AuthorizationFailure", "AuthorizationPermissionMismatch",
              "NoAuthenticationInformation", "InvalidAuthenticationInfo"}
SUFFIXES = ("core.windows.net", "core.chinacloudapi.cn", "core.usgovcloudapi.net")


@dataclass
class AzureBlobEntity(GraphFileEntity):
    """A blob of the container: downloaded only when its text is needed, hashed by Etag and size."""

    container: str = ""


class SharedKeyAuth(Auth):
    """Signs each request with the storage account key ("Authorize with Shared Key", Blob service).

    The string to sign is the verb, the standard headers (Content-Length empty when 0), the
    canonicalized `x-ms-*` headers and the canonicalized resource (`/<account><path>` then each
    query parameter, lower-cased and sorted, as `name:value`); the signature is the base64
    HMAC-SHA256 of it under the base64-decoded key. Raises ValueError for a key that is not base64.
    """

    STANDARD = ("Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
                "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range")

    def __init__(self, account: str, key: str, clock=None):
        self.account = account
        self.key = base64.b64decode(key, validate=True)
        self.clock = clock

    def string_to_sign(self, method: str, url: str, headers) -> str:
        """The string Azure Storage signs for this request (see the class docstring)."""
        values = [headers.get(h, "") for h in self.STANDARD]
        if values[2] == "0":
            values[2] = ""
        ms = sorted((k.lower().strip(), " ".join(str(v).split())) for k, v in headers.items()
                    if k.lower().startswith("x-ms-"))
        parts = urlsplit(url)
        resource = f"/{self.account}{parts.path or '/'}"
        params: dict[str, list[str]] = {}
        for k, v in parse_qsl(parts.query, keep_blank_values=True):
            params.setdefault(unquote(k).lower(), []).append(unquote(v))
        resource += "".join(f"\n{k}:{','.join(sorted(v))}" for k, v in sorted(params.items()))
        return "\n".join([method.upper(), *values, *(f"{k}:{v}" for k, v in ms), resource])

    def __call__(self, request):
        request.headers["x-ms-date"] = formatdate(self.clock() if self.clock else None, usegmt=True)
        request.headers["x-ms-version"] = API_VERSION
        signed = hmac.new(self.key, self.string_to_sign(request.method, request.url, request.headers).encode(),
                          hashlib.sha256).digest()
        request.headers["Authorization"] = f"SharedKey {self.account}:{base64.b64encode(signed).decode()}"
        return request


@source(
    name="Azure Blob Storage",
    short_name="azure_blob",
    description="Blobs of an Azure Storage container, converted to text, with their name's folders as breadcrumbs.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("account_key", "Account key", "string", "Storage account → Access keys (Shared Key).",
                    is_secret=True),
        ConfigField("sas_token", "SAS token", "string", "A container or account SAS with List and Read "
                    "(the query string, with or without the leading ?).", is_secret=True),
    ),
    config_fields=(
        ConfigField("account", "Storage account", "string", "The account's name (<name>.blob.core.windows.net).",
                    required=True),
        ConfigField("container", "Container", "string", required=True),
        ConfigField("prefix", "Prefix", "string", "Only blobs whose name starts with this (e.g. docs/).", default=""),
        ConfigField("endpoint_suffix", "Endpoint suffix", "string", "core.windows.net unless a sovereign cloud.",
                    enum_values=SUFFIXES, default="core.windows.net"),
    ),
    labels=("File Storage",),
    entity_types=(AzureBlobEntity,),
    rate_limit_level="connection",
    rate_limit="100/second",
)
class AzureBlobSource(BaseSource):
    """Lists the container with List Blobs and downloads what changed; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        account, container = out["account"].strip().lower(), out["container"].strip().lower()
        if not (3 <= len(account) <= 24 and account.isalnum()):
            raise ValueError("config field 'account' must be the storage account's name (3-24 letters and digits)")
        if not (3 <= len(container) <= 63 and all(c.isalnum() or c == "-" for c in container)) and container != "$root":
            raise ValueError("config field 'container' must be a container name (3-63 letters, digits and hyphens)")
        if out["endpoint_suffix"] not in SUFFIXES:
            raise ValueError(f"config field 'endpoint_suffix' takes one of {', '.join(SUFFIXES)}")
        out.update(account=account, container=container)
        return out

    @classmethod
    def validate_auth(cls, credentials: dict) -> dict:
        out = super().validate_auth(credentials)
        if bool(out.get("account_key")) == bool(out.get("sas_token")):
            raise ValueError("give exactly one of the credential fields 'account_key' and 'sas_token'")
        if out.get("account_key"):
            try:
                base64.b64decode(out["account_key"], validate=True)
            except ValueError:
                raise ValueError("credential field 'account_key' must be the base64 key Azure shows") from None
        return out

    @property
    def base_url(self) -> str:
        return f"https://{self.config['account']}.blob.{self.config.get('endpoint_suffix') or SUFFIXES[0]}"

    def http_auth(self):
        if self.credentials.get("sas_token"):
            return QueryAuth(dict(parse_qsl(self.credentials["sas_token"].lstrip("?"), keep_blank_values=True)))
        return SharedKeyAuth(self.config["account"], self.credentials["account_key"])

    def http_headers(self) -> dict:
        return {"x-ms-version": API_VERSION}

    def blob_url(self, name: str) -> str:
        return f"{self.base_url}/{self.config['container']}/{quote(name, safe='/~')}"

    def _list(self, marker: str | None) -> ET.Element:
        params = {"restype": "container", "comp": "list", "maxresults": str(PAGE_SIZE)}
        if self.config.get("prefix"):
            params["prefix"] = self.config["prefix"]
        if marker:
            params["marker"] = marker
        try:
            return ET.fromstring(self.http.get(f"/{self.config['container']}", params=params).content)
        except HttpError as exc:
            code = _error_code(exc.body)
            if code in AUTH_CODES or exc.status in (401, 403):
                self.http.auth_failed(AuthFailure(f"Azure Storage refused the credentials: {code or exc.status}",
                                                  "invalid_credentials"))
            if code == "ContainerNotFound" or exc.status == 404:
                raise SourceError(f"container '{self.config['container']}' does not exist in account "
                                  f"'{self.config['account']}'", "config_error") from None
            raise

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        def fetch(marker):
            root = self._list(marker)
            return root.findall("./Blobs/Blob"), root.findtext("NextMarker") or None

        for page in cursor_pages(fetch):
            for blob in page:
                name = blob.findtext("Name") or ""
                if name and not name.endswith("/"):
                    yield self._entity(name, blob.find("Properties"))

    def _entity(self, name: str, props: ET.Element | None) -> BaseEntity:
        prop = (lambda tag: props.findtext(tag) if props is not None else None)
        container, path = self.config["container"], PurePosixPath(name)
        folders = list(path.parts[:-1])
        crumbs = [Breadcrumb(container, container, "container")] + [
            Breadcrumb("/".join(folders[: i + 1]) + "/", folder, "folder") for i, folder in enumerate(folders)]
        if path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            return UnreadableEntity(entity_id=name, name=path.name, breadcrumbs=crumbs,
                                    reason=f"unsupported file type: {path.suffix.lower() or 'no extension'}")
        size, etag = int(prop("Content-Length") or 0), (prop("Etag") or "").strip('"')
        return AzureBlobEntity(
            entity_id=name, name=path.name, breadcrumbs=crumbs, container=container, size=size, content_tag=etag,
            mime_type=prop("Content-Type") or "", created_at=parse_time(prop("Creation-Time")),
            updated_at=parse_time(prop("Last-Modified")), web_url=self.blob_url(name),
            url=self.blob_url(name), fetch=download_fetcher(self.http, self.blob_url(name), path.name),
            raw_source_fields={"container": container, "name": name, "size_bytes": size, "etag": etag,
                               "content_type": prop("Content-Type"), "blob_type": prop("BlobType"),
                               "access_tier": prop("AccessTier")})


def _error_code(body: str | bytes | None) -> str:
    """The `<Code>` of an Azure Storage error document ('' when there is none)."""
    try:
        return ET.fromstring(body if isinstance(body, bytes) else (body or "").encode()).findtext("Code") or ""
    except ET.ParseError:
        return ""
