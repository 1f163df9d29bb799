"""A folder of good files mixed with bad ones: the job completes, the good files are indexed, and
each bad file is counted as skipped with its reason, grouped in error_details["skipped"]."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from airweave.collections.models import Chunk, Entity
from airweave.collections.services import collection_create
from airweave.tenancy.models import Organization
from airweave.tenancy.services import api_key_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from search.instant import InstantSearchRequest, search_instant

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
ENCRYPTED_PDF = SHARED_DATA / "docs_mixed_formats" / "docling_testdata" / "pdf_password" / "sources" / "2206.01062_pg3.pdf"
FIFTY_MB = 50 * 1024 * 1024

GOOD = {
    "good/leave.md": "---\ntitle: Leave policy\n---\nRequest annual leave through the HR portal two weeks ahead.",
    "good/travel.txt": "Book travel with the agency and keep your receipts for reimbursement.",
    "tokens.txt": "The marmalade recipe <|endoftext|> continues after the special token with oranges and sugar.",
}
# file -> reason prefix (the key of error_details["skipped"])
BAD = {
    "bad/corrupt.pdf": "unreadable PDF",
    "bad/encrypted.pdf": "encrypted PDF",
    "bad/empty.md": "empty",
    "bad/latin_garbage.txt": "unreadable",
    "bad/huge.txt": "file too large",
}


def make_mixed_folder(root: Path) -> Path:
    assert ENCRYPTED_PDF.exists(), ENCRYPTED_PDF
    files = {
        **GOOD,
        "bad/corrupt.pdf": b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nthis is not a real pdf\n%%EOF",
        "bad/empty.md": b"",
        # Bytes that are neither UTF-8 nor Windows-1252, with no BOM and no control characters.
        "bad/latin_garbage.txt": b"\x81\x8d\x8f\x90\x9d" * 400,
    }
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    shutil.copyfile(ENCRYPTED_PDF, root / "bad" / "encrypted.pdf")
    with open(root / "bad" / "huge.txt", "wb") as f:  # sparse: no disk space used
        f.truncate(FIFTY_MB)
    return root


@pytest.fixture(scope="module")
def synced_module(django_db_setup, django_db_blocker, tmp_path_factory):
    """The mixed folder synced once for the module (committed; its organization is deleted at the end)."""
    root = make_mixed_folder(tmp_path_factory.mktemp("bad_files") / "docs")
    with django_db_blocker.unblock():
        org = Organization.objects.create(name=f"bad-files-{uuid.uuid4().hex[:8]}")
        try:
            collection = collection_create(organization=org, name="Bad files", readable_id="bad-files")
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(root)}, sync_immediately=False, for_api=False)
            job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
            connection.refresh_from_db()
            key = api_key_create(organization=org, name="bad-files").key
        except BaseException:
            org.delete()
            raise
    yield SimpleNamespace(root=root, collection=collection, connection=connection, job=job, key=key)
    with django_db_blocker.unblock():
        org.delete()


@pytest.fixture
def synced(synced_module, db):
    return synced_module.collection, synced_module.connection, synced_module.job


def test_job_completes_and_indexes_the_good_files(synced):
    collection, connection, job = synced
    assert job.status == "completed", job.error
    assert job.entities_inserted == len(GOOD)
    assert job.entities_failed == 0
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == set(GOOD)
    assert job.entities_encountered == {"LocalFileEntity": len(GOOD) + len(BAD)}
    assert connection.status == "active"


def test_each_bad_file_is_skipped_with_its_reason(synced):
    _, _, job = synced
    assert job.entities_skipped == len(BAD)
    skipped = job.error_details["skipped"]
    assert set(skipped) == set(BAD.values()), skipped
    for entity_id, prefix in BAD.items():
        bucket = skipped[prefix]
        assert set(bucket) == {"count", "examples"}
        assert bucket["count"] == 1
        (example,) = bucket["examples"]
        assert example["entity_id"] == entity_id
        assert example["reason"].startswith(prefix)
    assert skipped["encrypted PDF"]["examples"][0]["reason"] == "encrypted PDF"
    assert str(FIFTY_MB) in skipped["file too large"]["examples"][0]["reason"]
    assert sum(b["count"] for b in skipped.values()) == job.entities_skipped


def test_special_tokens_are_indexed_as_text_and_searchable(synced):
    collection, connection, _ = synced
    entity = Entity.objects.get(source_connection=connection, entity_id="tokens.txt")
    texts = list(Chunk.objects.filter(entity=entity).values_list("text", flat=True))
    assert texts and "<|endoftext|>" in " ".join(texts)
    for strategy in ("keyword", "hybrid"):
        results = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
            query="marmalade oranges", retrieval_strategy=strategy, limit=3)).results
        assert results[0]["airweave_system_metadata"]["original_entity_id"] == "tokens.txt"
        assert "<|endoftext|>" in results[0]["textual_representation"]
    results = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query="<|endoftext|>", retrieval_strategy="keyword")).results
    assert [r["airweave_system_metadata"]["original_entity_id"] for r in results] == ["tokens.txt"]


def test_skips_are_visible_over_rest(synced_module, synced):
    _, connection, job = synced
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=synced_module.key)
    r = client.get(f"/source-connections/{connection.id}/jobs")
    assert r.status_code == 200
    (body,) = r.json()
    assert body["id"] == str(job.id)
    assert body["status"] == "completed"
    assert body["entities_inserted"] == len(GOOD)
    assert body["entities_skipped"] == len(BAD)
    assert body["error"] is None
    assert body["error_details"]["skipped"] == job.error_details["skipped"]


def test_resync_skips_the_bad_files_again_and_keeps_the_good(synced_module, synced, sync_folder):
    _, connection, _ = synced
    _, job = sync_folder(None, synced_module.root, connection=connection)  # rolled back after the test
    assert job.status == "completed"
    assert (job.entities_inserted, job.entities_kept, job.entities_deleted) == (0, len(GOOD), 0)
    assert job.entities_skipped == len(BAD)


def test_many_bad_files_of_one_kind_keep_a_few_examples(make_collection, sync_folder, write_files, tmp_path):
    root = write_files({**{f"empty{i}.md": b"" for i in range(8)}, "ok.md": "# Fine\nA good file."},
                       root=tmp_path / "empties")
    _, job = sync_folder(make_collection(readable_id="empties"), root)
    assert job.status == "completed"
    assert (job.entities_inserted, job.entities_skipped) == (1, 8)
    bucket = job.error_details["skipped"]["empty"]
    assert bucket["count"] == 8
    assert 1 <= len(bucket["examples"]) <= 5
