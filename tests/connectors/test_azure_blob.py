"""The azure_blob source against a fake Blob service that checks requests the way Azure Storage does:
Shared Key signatures recomputed here from Microsoft's specification (the string to sign, the
HMAC-SHA256 under the account key) and refused with Azure's own 403 `AuthenticationFailed` when
they do not match, or a SAS token's query parameters; List Blobs with `restype`, `comp`,
`maxresults`, `prefix` and `marker`, answered with the documented `EnumerationResults` XML. Blobs over
two pages converted to text, an unsupported type skipped, a 503 ServerBusy retried, a refused key
marking the connection `needs_reauth`, a missing container a `config_error`, a sync found by
search, then a second run that keeps unchanged blobs without downloading them and removes a
deleted one."""
from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import parse_qs, urlsplit

import pytest

from airweave.collections.models import Entity, SourceConnection
from connectors.sources import azure_blob
from connectors.sources.azure_blob import AzureBlobEntity, AzureBlobSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

ACCOUNT, CONTAINER = "harbourdocs", "handbook"
SITE = f"https://{ACCOUNT}.blob.core.windows.net"
KEY = base64.b64encode(b"harbour-docs-account-key-0123456789abcdef").decode()
SAS = "sv=2022-11-02&ss=b&srt=co&sp=rl&se=2030-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig=c2lnbmF0dXJl"
CONFIG = {"account": ACCOUNT, "container": CONTAINER}
FILES = {"ops/storms.md": b"# Storm procedure\n\nWhen winds exceed 50 knots all sailings are suspended.\n",
         "ops/crew/rota.txt": b"The crew rota is published every Friday.\n",
         "menu.md": b"# Cafe menu\n\nSoup of the day and fresh bread.\n",
         "logo.png": b"\x89PNG\r\n"}


def expected_signature(request) -> str:
    """Shared Key for the Blob service, written from Microsoft's "Authorize with Shared Key" page."""
    h = request.headers
    parts = urlsplit(request.url)
    query = parse_qs(parts.query, keep_blank_values=True)
    canonical_headers = "".join(f"{k}:{h[k]}\n" for k in sorted(k.lower() for k in h if k.lower().startswith("x-ms-")))
    canonical_resource = f"/{ACCOUNT}{parts.path}" + "".join(
        f"\n{k.lower()}:{','.join(sorted(v))}" for k, v in sorted(query.items()))
    length = h.get("Content-Length", "")
    string = "\n".join([request.method, h.get("Content-Encoding", ""), h.get("Content-Language", ""),
                        "" if length == "0" else length, h.get("Content-MD5", ""), h.get("Content-Type", ""),
                        h.get("Date", ""), h.get("If-Modified-Since", ""), h.get("If-Match", ""),
                        h.get("If-None-Match", ""), h.get("If-Unmodified-Since", ""), h.get("Range", "")]) + "\n"
    string += canonical_headers + canonical_resource
    mac = hmac.new(base64.b64decode(KEY), string.encode(), hashlib.sha256).digest()
    return f"SharedKey {ACCOUNT}:{base64.b64encode(mac).decode()}"


DENIED = (403, {"x-ms-error-code": "AuthenticationFailed"},
          '<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to '
          'authenticate the request. Make sure the value of Authorization header is formed correctly including the '
          'signature.</Message></Error>')


def signed(reply):
    def answer(request, params):
        if request.headers.get("Authorization") != expected_signature(request) or \
                request.headers.get("x-ms-version") != "2023-11-03" or not request.headers.get("x-ms-date"):
            return DENIED
        return reply(request, params) if callable(reply) else reply
    return answer


def blob_xml(name, etag):
    return (f"<Blob><Name>{name}</Name><Properties><Creation-Time>Wed, 01 May 2024 08:00:00 GMT</Creation-Time>"
            f"<Last-Modified>Thu, 02 May 2024 09:00:00 GMT</Last-Modified><Etag>{etag}</Etag>"
            f"<Content-Length>{len(FILES[name])}</Content-Length><Content-Type>text/plain</Content-Type>"
            "<BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier><LeaseStatus>unlocked</LeaseStatus>"
            "</Properties><OrMetadata /></Blob>")


def listing(names, marker=None, next_marker=None):
    blobs = "".join(blob_xml(n, f"0x8DC{abs(hash(n)) % 10**12:012X}") for n in names)
    return (200, {"Content-Type": "application/xml"},
            f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="{SITE}/" '
            f'ContainerName="{CONTAINER}">{f"<Marker>{marker}</Marker>" if marker else ""}<MaxResults>2</MaxResults>'
            f"<Blobs>{blobs}</Blobs><NextMarker>{next_marker or ''}</NextMarker></EnumerationResults>")


def container(fake, pages=(("ops/storms.md", "ops/crew/rota.txt"), ("menu.md", "logo.png")), wrap=signed,
              extra=None):
    downloads = {}
    for n, page in enumerate(pages):
        query = {"restype": "container", "comp": "list", "maxresults": "2", **(extra or {})}
        if n:
            query["marker"] = f"m{n}"
        fake.route("GET", f"/{CONTAINER}", query=query, reply=wrap(listing(page, f"m{n}" if n else None,
                                                                            f"m{n + 1}" if n + 1 < len(pages) else None)))
        for name in page:
            downloads[name] = fake.route("GET", f"/{CONTAINER}/{name}", query=extra or {},
                                         reply=wrap((200, {"Content-Type": "text/plain"}, FILES[name])))
    return downloads


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(azure_blob, "PAGE_SIZE", 2)


def test_blobs_over_two_pages_signed_with_the_account_key(vendor):
    downloads = container(vendor(SITE))
    source = AzureBlobSource(AzureBlobSource.validate_config(CONFIG), {"account_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["logo.png", "menu.md", "ops/crew/rota.txt", "ops/storms.md"]
    rota = entities["ops/crew/rota.txt"]
    assert isinstance(rota, AzureBlobEntity) and [b.name for b in rota.breadcrumbs] == [CONTAINER, "ops", "crew"]
    assert rota.web_url == f"{SITE}/{CONTAINER}/ops/crew/rota.txt" and rota.updated_at.isoformat().startswith(
        "2024-05-02T09:00:00")
    assert "unsupported file type" in entities["logo.png"].reason
    assert downloads["ops/crew/rota.txt"].calls == 0  # listed only: downloaded when the pipeline needs its text
    assert rota.path.read_bytes() == FILES["ops/crew/rota.txt"] and downloads["ops/crew/rota.txt"].calls == 1


def test_a_sas_token_goes_in_the_query(vendor):
    sas = {k: v[0] for k, v in parse_qs(SAS).items()}
    container(vendor(SITE), pages=(("menu.md",),), wrap=lambda reply: reply, extra=sas)
    source = AzureBlobSource(AzureBlobSource.validate_config({**CONFIG, "prefix": ""}), {"sas_token": "?" + SAS})
    [menu] = list(source.generate_entities({}))
    assert menu.path.read_bytes() == FILES["menu.md"]


def test_credentials_and_names_are_checked():
    with pytest.raises(ValueError, match="exactly one"):
        AzureBlobSource.validate_auth({"account_key": KEY, "sas_token": SAS})
    with pytest.raises(ValueError, match="base64"):
        AzureBlobSource.validate_auth({"account_key": "not base64!"})
    with pytest.raises(ValueError, match="'account'"):
        AzureBlobSource.validate_config({"account": "evil.example/x", "container": CONTAINER})


def test_a_503_server_busy_is_retried(vendor):
    fake = vendor(SITE)
    busy = fake.route("GET", f"/{CONTAINER}", query={"restype": "container", "comp": "list", "maxresults": "2"},
                      reply=[(503, {"Retry-After": "0", "x-ms-error-code": "ServerBusy"},
                              "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy</Code><Message>The "
                              "server is busy.</Message></Error>"), listing(["menu.md"])])
    source = AzureBlobSource(AzureBlobSource.validate_config(CONFIG), {"account_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert [e.entity_id for e in source.generate_entities({})] == ["menu.md"] and busy.calls == 2 and len(waits) == 1


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    container(vendor(SITE))
    wrong = base64.b64encode(b"a-key-that-was-rotated-away-0123456789").decode()
    connection = connect(make_collection(), "azure_blob", {"account_key": wrong}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_a_missing_container_is_a_config_error(vendor, make_collection):
    vendor(SITE).route("GET", f"/{CONTAINER}", optional=("restype", "comp", "maxresults"), reply=(
        404, {"x-ms-error-code": "ContainerNotFound"}, "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>"
        "ContainerNotFound</Code><Message>The specified container does not exist.</Message></Error>"))
    job = run_sync(connect(make_collection(), "azure_blob", {"account_key": KEY}, CONFIG))
    assert (job.status, job.error_category) == ("failed", "config_error") and CONTAINER in job.error


def test_sync_search_then_unchanged_blobs_are_kept_without_a_download(vendor, make_collection, client):
    fake = vendor(SITE)
    container(fake)
    connection = connect(make_collection(), "azure_blob", {"account_key": KEY}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 3, 1), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["ops/storms.md"]

    fake.routes.clear()
    downloads = container(fake, pages=(("ops/storms.md", "ops/crew/rota.txt"),))  # menu.md was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 2, 1), job.error
    assert all(route.calls == 0 for route in downloads.values())
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        {"ops/storms.md", "ops/crew/rota.txt"}
