"""S3-compatible object storage: the objects of a bucket (or a prefix), converted to text.

Works with AWS S3 and every service that speaks its API: Cloudflare R2
(`https://<account id>.r2.cloudflarestorage.com`, region `auto`), MinIO, Backblaze B2, Wasabi,
Ceph RGW, and Google Cloud Storage through its XML interoperability API
(`https://storage.googleapis.com` with an HMAC key). `endpoint_url` empty means AWS.

Auth: an access key id and secret access key (and a session token for temporary AWS
credentials), direct. Requests are signed with AWS Signature Version 4 by botocore's own signer
(`S3SigV4Auth`) and sent through the shared HTTP client (`self.http`), so retries (503 SlowDown,
5xx, timeouts), 429 with Retry-After, the per-connection rate limit and the SSRF guard apply as
to every other source. `endpoint_url` is user-supplied: a private or loopback host is refused
at creation (422) unless AIRWEAVE_ALLOW_PRIVATE_HOSTS or AIRWEAVE_ALLOWED_PRIVATE_NETWORKS
allows it (a MinIO on your own network).

API: `GET /?list-type=2&prefix=&max-keys=1000[&continuation-token=]` (ListObjectsV2, paged by
`NextContinuationToken`), then `GET /<key>` for the objects whose text the pipeline needs.
Addressing: virtual-hosted (`https://<bucket>.s3.<region>.amazonaws.com/<key>`) on AWS, path
style (`<endpoint>/<bucket>/<key>`) elsewhere by default (`addressing_style` chooses).
Errors: `InvalidAccessKeyId`, `SignatureDoesNotMatch`, `InvalidToken`, `ExpiredToken`,
`AccessDenied` (403/400) mark the connection `needs_reauth` (category `invalid_credentials`,
`token_expired` or `insufficient_scope`); `NoSuchBucket` fails the job with `config_error`.

Entities: S3ObjectEntity, one per object whose extension a converter reads (Markdown, text and
code, HTML, PDF, DOCX, PPTX, XLSX, CSV); `entity_id` = the key; breadcrumbs = the bucket, then
each "folder" of the key; `web_url` = the S3 console (AWS) or the object's URL; size, ETag,
storage class and content type in `raw_source_fields`. Objects of other types are skipped with
the reason; "folder" markers (keys ending in `/`) are not entities.

Sync: S3 has no change feed to poll (event notifications need a queue of their own), so every
run lists the keys (1,000 per request: cheap) and is a full listing, so deleted objects are
removed by absence (within the partial-listing guard). The content hash is the object's ETag
and size, so an unchanged object is kept without being downloaded; new and changed objects are
downloaded (over AIRWEAVE_MAX_FILE_BYTES: skipped by the listed size, before any download).
The cursor records the newest `LastModified` and the key count of the last run, for the job
history.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterator
from urllib.parse import quote, urlsplit

from connectors.auth.tokens import Auth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.http import HttpError, cursor_pages
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._msgraph import GraphFileEntity, download_fetcher
from connectors.sources._saas import parse_time

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
PAGE_SIZE = 1000
AUTH_CODES = {"InvalidAccessKeyId": "invalid_credentials", "SignatureDoesNotMatch": "invalid_credentials",
              "InvalidToken": "invalid_credentials", "ExpiredToken": "token_expired",
              "TokenRefreshRequired": "token_expired", "AccessDenied": "insufficient_scope",
              "AllAccessDisabled": "insufficient_scope"}


@dataclass
class S3ObjectEntity(GraphFileEntity):
    """An object of the bucket: downloaded only when its text is needed, hashed by ETag and size."""

    key: str = ""
    bucket: str = ""


class SigV4Auth(Auth):
    """Signs each request with AWS Signature Version 4 for S3 (botocore's S3SigV4Auth).

    Only `host`, `x-amz-date`, `x-amz-content-sha256` (and `x-amz-security-token`) are signed,
    so headers the HTTP stack adds later cannot break the signature.
    """

    def __init__(self, access_key: str, secret_key: str, session_token: str | None, region: str):
        from botocore.credentials import Credentials

        self.credentials = Credentials(access_key, secret_key, session_token or None)
        self.region = region

    def __call__(self, request):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest

        unsigned = AWSRequest(method=request.method, url=request.url, data=request.body or b"",
                              headers={"Host": urlsplit(request.url).netloc})
        S3SigV4Auth(self.credentials, "s3", self.region).add_auth(unsigned)
        for name, value in unsigned.headers.items():
            if name.lower() in ("authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"):
                request.headers[name] = value
        return request


@source(
    name="S3-compatible storage",
    short_name="s3",
    description="Objects of an S3 bucket (AWS S3, Cloudflare R2, MinIO, Google Cloud Storage and other "
                "S3-compatible stores), converted to text, with their key's folders as breadcrumbs.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("access_key_id", "Access key ID", "string", "An access key with s3:ListBucket and s3:GetObject "
                    "(R2: an API token's Access Key ID; GCS: an HMAC key).", required=True),
        ConfigField("secret_access_key", "Secret access key", "string", required=True, is_secret=True),
        ConfigField("session_token", "Session token", "string", "For temporary AWS credentials (STS) only.",
                    is_secret=True),
    ),
    config_fields=(
        ConfigField("bucket", "Bucket", "string", "The bucket's name.", required=True),
        ConfigField("prefix", "Prefix", "string", "Only keys starting with this (e.g. docs/).", default=""),
        ConfigField("endpoint_url", "Endpoint URL", "string", "Empty for AWS; e.g. "
                    "https://<account id>.r2.cloudflarestorage.com, https://storage.googleapis.com, a MinIO URL.",
                    default=""),
        ConfigField("region", "Region", "string", "The bucket's region (R2: auto).", default="us-east-1"),
        ConfigField("addressing_style", "Addressing style", "string", "auto: virtual-hosted on AWS, path style "
                    "elsewhere.", enum_values=("auto", "path", "virtual"), default="auto"),
    ),
    labels=("File Storage",),
    entity_types=(S3ObjectEntity,),
    rate_limit_level="connection",
    rate_limit="50/second",
)
class S3Source(BaseSource):
    """Lists the bucket with ListObjectsV2 and downloads what changed; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        bucket = out["bucket"].strip()
        if not 3 <= len(bucket) <= 255 or "/" in bucket or bucket != bucket.strip("."):
            raise ValueError("config field 'bucket' must be a bucket name (3-255 characters, no '/')")
        out["bucket"] = bucket
        endpoint = (out.get("endpoint_url") or "").strip().rstrip("/")
        if endpoint:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
                raise ValueError("config field 'endpoint_url' must be an http(s) URL with a host, e.g. "
                                 "https://minio.example.org:9000")
            try:
                check_url(endpoint)
            except BlockedAddress as exc:
                raise ValueError(f"config field 'endpoint_url': {exc}") from None
        out["endpoint_url"] = endpoint
        return out

    def http_auth(self):
        return SigV4Auth(self.credentials["access_key_id"], self.credentials["secret_access_key"],
                         self.credentials.get("session_token"), self.config.get("region") or "us-east-1")

    @property
    def bucket_url(self) -> str:
        """The bucket's base URL, without a trailing slash."""
        bucket, region = self.config["bucket"], self.config.get("region") or "us-east-1"
        endpoint, style = self.config.get("endpoint_url") or "", self.config.get("addressing_style") or "auto"
        if not endpoint:
            host = "s3.amazonaws.com" if region == "us-east-1" else f"s3.{region}.amazonaws.com"
            endpoint, style = f"https://{host}", "virtual" if style == "auto" else style
        if style == "virtual":
            parts = urlsplit(endpoint)
            return f"{parts.scheme}://{bucket}.{parts.netloc}"
        return f"{endpoint}/{quote(bucket)}"

    def object_url(self, key: str) -> str:
        return f"{self.bucket_url}/{quote(key, safe='/~')}"

    # --- listing ------------------------------------------------------------------------------

    def _request(self, url: str, params: dict | None = None):
        try:
            return self.http.get(url, params=params)
        except HttpError as exc:
            code = _error_code(exc.body)
            if code in AUTH_CODES:
                self.http.auth_failed(AuthFailure(f"the storage service refused the credentials: {code}",
                                                  AUTH_CODES[code]))
            if code == "NoSuchBucket" or exc.status == 404:
                raise SourceError(f"bucket '{self.config['bucket']}' does not exist at this endpoint",
                                  "config_error") from None
            raise

    def _pages(self) -> Iterator[list[ET.Element]]:
        def fetch(token):
            params = {"list-type": "2", "max-keys": str(PAGE_SIZE)}
            if self.config.get("prefix"):
                params["prefix"] = self.config["prefix"]
            if token:
                params["continuation-token"] = token
            root = ET.fromstring(self._request(self.bucket_url + "/", params).content)
            truncated = (root.findtext(f"{NS}IsTruncated") or "false") == "true"
            return root.findall(f"{NS}Contents"), root.findtext(f"{NS}NextContinuationToken") if truncated else None

        return cursor_pages(fetch)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._newest, self._count = None, 0
        bucket = self.config["bucket"]
        for page in self._pages():
            for item in page:
                key = item.findtext(f"{NS}Key") or ""
                if not key or key.endswith("/"):
                    continue
                self._count += 1
                modified = item.findtext(f"{NS}LastModified")
                if modified and (self._newest is None or modified > self._newest):
                    self._newest = modified
                yield self._entity(bucket, key, item, modified)

    def _entity(self, bucket: str, key: str, item: ET.Element, modified: str | None) -> BaseEntity:
        path = PurePosixPath(key)
        name = path.name
        extension = path.suffix.lower()
        folders = list(path.parts[:-1])
        crumbs = [Breadcrumb(bucket, bucket, "bucket")]
        crumbs += [Breadcrumb("/".join(folders[: i + 1]) + "/", folder, "folder") for i, folder in enumerate(folders)]
        if extension not in SUPPORTED_EXTENSIONS:
            return UnreadableEntity(entity_id=key, name=name, breadcrumbs=crumbs,
                                    reason=f"unsupported file type: {extension or 'no extension'}")
        size = int(item.findtext(f"{NS}Size") or 0)
        etag = (item.findtext(f"{NS}ETag") or "").strip('"')
        return S3ObjectEntity(
            entity_id=key, name=name, breadcrumbs=crumbs, key=key, bucket=bucket, size=size, content_tag=etag,
            updated_at=parse_time(modified), web_url=self._web_url(key), url=self.object_url(key),
            fetch=download_fetcher(self.http, self.object_url(key), name),
            raw_source_fields={"bucket": bucket, "key": key, "extension": extension, "size_bytes": size, "etag": etag,
                               "storage_class": item.findtext(f"{NS}StorageClass")})

    def _web_url(self, key: str) -> str:
        if self.config.get("endpoint_url"):
            return self.object_url(key)
        region = self.config.get("region") or "us-east-1"
        return (f"https://{region}.console.aws.amazon.com/s3/object/{quote(self.config['bucket'])}"
                f"?region={region}&prefix={quote(key, safe='')}")

    def next_cursor(self) -> dict:
        return {"newest_last_modified": self._newest, "objects": self._count}


def _error_code(body: str | bytes | None) -> str:
    """The `<Code>` of an S3 error document ('' when there is none)."""
    if not body:
        return ""
    try:
        root = ET.fromstring(body if isinstance(body, bytes) else body.encode())
    except ET.ParseError:
        return ""
    return root.findtext("Code") or root.findtext(f"{NS}Code") or ""
