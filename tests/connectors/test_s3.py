"""The s3 source against a real S3-compatible server: moto's server mode (ThreadedMotoServer),
started by these tests on a free local port and driven with boto3, so the source's own SigV4
signing, ListObjectsV2 paging, downloads and error handling meet a server that checks them.

Covered: paging over ListObjectsV2 continuation tokens, entity fields (key, folders as
breadcrumbs, web_url, size, ETag), real PDF/DOCX/Markdown converted, unsupported types skipped,
a 429 with Retry-After waited out (the first listing answered 429 at the transport, the retry
reaching the server), a revoked access key (moto with IAM authentication on) marking the
connection `needs_reauth`, a deleted object removed, an unchanged object kept without a
download, a sync found by search, and a loopback endpoint refused over the API (422).
"""
from __future__ import annotations

import json
import re
import socket
import uuid

import boto3
import pytest
import requests
import responses
from botocore.config import Config
from moto.server import ThreadedMotoServer

from airweave.collections.models import Chunk, Entity, SourceConnection
from connectors.sources.s3 import S3ObjectEntity, S3Source
from tests.conftest import SHARED_DATA
from tests.connectors.saas_cases import connect, run_sync, search_ids

FILES = [SHARED_DATA / "docs_mixed_formats/docling_testdata/pdf/sources/2305.03393v1-pg9.pdf",
         SHARED_DATA / "docs_mixed_formats/docling_testdata/docx/sources/lorem_ipsum.docx"]
KEYS = {"access_key_id": "AKIAEXAMPLEKEY000001", "secret_access_key": "example-secret-access-key-0000000001"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    yield f"http://127.0.0.1:{port}"
    moto.stop()


@pytest.fixture
def private_hosts(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True


def client_for(endpoint, keys=KEYS, service="s3"):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=keys["access_key_id"], aws_secret_access_key=keys["secret_access_key"],
                        config=Config(s3={"addressing_style": "path"}))


@pytest.fixture
def bucket(server):
    name = f"handbook-{uuid.uuid4().hex[:12]}"
    s3 = client_for(server)
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="guides/onboarding.md",
                  Body=b"# Onboarding\n\nNew engineers get their laptop and badge from the front desk on day one.")
    s3.put_object(Bucket=name, Key="guides/ops/oncall.md",
                  Body=b"# On-call\n\nThe on-call engineer acknowledges pages within fifteen minutes.")
    s3.put_object(Bucket=name, Key="guides/", Body=b"")  # a console "folder" marker
    s3.put_object(Bucket=name, Key="media/logo.png", Body=b"\x89PNG\r\n\x1a\n")
    return s3, name


def make(server, name, **config):
    return S3Source(S3Source.validate_config({"bucket": name, "endpoint_url": server, **config}), dict(KEYS))


def test_listing_pages_entities_and_breadcrumbs(server, bucket, private_hosts, monkeypatch):
    import connectors.sources.s3 as s3_module

    monkeypatch.setattr(s3_module, "PAGE_SIZE", 2)  # four keys over two ListObjectsV2 pages
    s3, name = bucket
    source = make(server, name)
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["guides/onboarding.md", "guides/ops/oncall.md", "media/logo.png"]
    oncall = entities["guides/ops/oncall.md"]
    assert isinstance(oncall, S3ObjectEntity)
    assert [(b.entity_id, b.name) for b in oncall.breadcrumbs] == [(name, name), ("guides/", "guides"),
                                                                  ("guides/ops/", "ops")]
    assert oncall.web_url == f"{server}/{name}/guides/ops/oncall.md"
    head = s3.head_object(Bucket=name, Key="guides/ops/oncall.md")
    assert oncall.content_tag == head["ETag"].strip('"') and oncall.size == head["ContentLength"]
    assert "fifteen minutes" in oncall.path.read_text()  # downloaded on first use, signed
    assert entities["media/logo.png"].reason == "unsupported file type: .png"
    assert source.next_cursor()["objects"] == 3


def test_the_aws_urls_are_virtual_hosted():
    source = S3Source(S3Source.validate_config({"bucket": "acme-docs", "region": "eu-west-1"}), dict(KEYS))
    assert source.object_url("a b/c.md") == "https://acme-docs.s3.eu-west-1.amazonaws.com/a%20b/c.md"
    assert source._web_url("a/c.md").startswith("https://eu-west-1.console.aws.amazon.com/s3/object/acme-docs?")
    r2 = S3Source(S3Source.validate_config({"bucket": "docs", "region": "auto",
                                            "endpoint_url": "https://0123abcd.r2.cloudflarestorage.com"}), dict(KEYS))
    assert r2.bucket_url == "https://0123abcd.r2.cloudflarestorage.com/docs"


def test_a_429_with_retry_after_is_waited_out(server, bucket, private_hosts):
    _, name = bucket
    listing = re.compile(re.escape(f"{server}/{name}/") + r"\?list-type=2.*")
    with responses.RequestsMock() as rsps:
        # The first listing request is answered 429 at the transport; the retry goes through to the server.
        limited = rsps.add("GET", listing, status=429, headers={"Retry-After": "0"},
                           body="<Error><Code>SlowDown</Code></Error>")
        rsps.add(responses.PassthroughResponse("GET", listing))
        source = make(server, name)
        waits = []
        source.http.sleep = waits.append
        assert len(list(source.generate_entities({}))) == 3
    assert limited.call_count == 1 and len(waits) == 1 and waits[0] < 2


def test_sync_found_by_search_then_a_deleted_object_is_removed_and_unchanged_ones_kept(
        server, bucket, private_hosts, make_collection, client):
    s3, name = bucket
    for path in FILES:  # real PDF and DOCX files, converted like local files
        s3.put_object(Bucket=name, Key=f"files/{path.name}", Body=path.read_bytes())
    connection = connect(make_collection(), "s3", dict(KEYS), {"bucket": name, "endpoint_url": server})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 4, 1), job.error
    pdf = Entity.objects.get(source_connection=connection, entity_id=f"files/{FILES[0].name}")
    assert Chunk.objects.filter(entity=pdf).exists()
    assert search_ids(client, "how fast must the on-call engineer acknowledge a page", limit=1) == \
        ["guides/ops/oncall.md"]

    s3.delete_object(Bucket=name, Key="guides/onboarding.md")
    s3.put_object(Bucket=name, Key="guides/ops/oncall.md",
                  Body=b"# On-call\n\nThe on-call engineer acknowledges pages within five minutes.")
    job = run_sync(connection)
    assert (job.status, job.entities_deleted, job.entities_updated) == ("completed", 1, 1), job.error
    assert job.entities_kept == 2  # the PDF and the DOCX: same ETag, not downloaded again
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "guides/onboarding.md" not in left and "guides/ops/oncall.md" in left


def test_a_revoked_access_key_marks_the_connection_needs_reauth(server, bucket, private_hosts, make_collection):
    _, name = bucket
    iam = client_for(server, service="iam")
    iam.create_user(UserName="indexer")
    iam.put_user_policy(UserName="indexer", PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*", "iam:*"], "Resource": "*"}]}))
    key = iam.create_access_key(UserName="indexer")["AccessKey"]
    credentials = {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
    connection = connect(make_collection(), "s3", credentials, {"bucket": name, "endpoint_url": server})
    requests.post(f"{server}/moto-api/reset-auth", data=b"0").raise_for_status()  # IAM authentication from now on
    try:
        job = run_sync(connection)
        assert job.status == "completed", job.error  # the key works, its signature is checked
        wrong = connect(make_collection(readable_id="other"), "s3",
                        {**credentials, "secret_access_key": "not-the-secret-0123456789"},
                        {"bucket": name, "endpoint_url": server})
        job = run_sync(wrong)
        assert (job.status, job.error_category) == ("failed", "invalid_credentials"), job.error
        own = {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
        client_for(server, own, "iam").delete_access_key(UserName="indexer", AccessKeyId=key["AccessKeyId"])
        job = run_sync(connection)
    finally:
        requests.post(f"{server}/moto-api/reset-auth", data=b"inf").raise_for_status()
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials"), job.error
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_a_missing_bucket_is_a_config_error(server, private_hosts, make_collection):
    connection = connect(make_collection(), "s3", dict(KEYS), {"bucket": "no-such-bucket-here",
                                                                "endpoint_url": server})
    job = run_sync(connection)
    assert (job.status, job.error_category) == ("failed", "config_error")


def test_a_loopback_endpoint_or_a_bad_bucket_is_refused_over_the_api(client, make_collection):
    make_collection()
    for config in ({"bucket": "docs", "endpoint_url": "http://127.0.0.1:9000"},
                   {"bucket": "docs", "endpoint_url": "ftp://minio.example.org"},
                   {"bucket": "a/b"}):
        r = client.post("/source-connections", {"short_name": "s3", "readable_collection_id": "docs",
                                                "config": config, "authentication": {"credentials": KEYS}},
                        format="json")
        assert r.status_code == 422, (config, r.content)
