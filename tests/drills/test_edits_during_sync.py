"""Drill 4: files change while their folder syncs, and searches run through a re-index.

(a) While a 300-file folder syncs (after its first batch is written) one file already indexed
is edited and one deleted, one not yet read is edited, one renamed and one deleted. The job
completes, and the next sync converges: the index equals a clean sync of the folder as it now is.
(b) A large entity is edited and re-indexed twice while a client searches for it without pause
through a real daphne: every answer finds it, and always one whole version of it (never
vanished, never the old and the new chunks at once).
"""
from __future__ import annotations

import threading
import uuid

import httpx
import pytest

from airweave.collections.services import collection_create
from airweave.tenancy.models import Organization
from airweave.tenancy.services import api_key_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.drills.corpus import write_corpus
from tests.drills.index_checks import index_state
from tests.processes import start_daphne


def _connection(collection, path):
    return source_connection_create(collection=collection, short_name="local_files", config={"path": str(path)},
                                    sync_immediately=False, for_api=False)


def _sync(connection, on_progress=None):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id, on_progress=on_progress)


@pytest.mark.slow
def test_edits_renames_and_deletions_mid_sync_converge_at_the_next_sync(db, org, tmp_path):
    root = write_corpus(tmp_path / "corpus", 300)
    connection = _connection(collection_create(organization=org, name="Edited", readable_id="edited"), root)
    done = {}

    def edit_once(counters):
        if done:
            return
        written = sorted(connection.entities.values_list("entity_id", flat=True))
        unread = sorted({str(p.relative_to(root)) for p in root.rglob("*.md")} - set(written))
        edited_indexed, deleted_indexed = written[0], written[1]
        edited_unread, renamed, deleted_unread = unread[0], unread[1], unread[2]
        (root / edited_indexed).write_text("---\ntitle: Edited after indexing\n---\nNew words arrive later.\n")
        (root / deleted_indexed).unlink()
        (root / edited_unread).write_text("---\ntitle: Edited before reading\n---\nRead in its new form.\n")
        (root / renamed).rename(root / renamed.replace(".md", "-renamed.md"))
        (root / deleted_unread).unlink()
        done.update(written=len(written))

    first = _sync(connection, on_progress=edit_once)
    assert done and first.status == "completed", first.error
    second = _sync(connection)
    assert second.status == "completed", second.error

    clean = _connection(collection_create(organization=org, name="Clean", readable_id="clean"), root)
    assert _sync(clean).status == "completed"
    assert index_state(connection) == index_state(clean)
    assert len(index_state(connection)) == 300 - 2  # two deleted; the renamed one under its new name
    third = _sync(connection)
    assert (third.entities_inserted, third.entities_updated, third.entities_deleted) == (0, 0, 0)


BIG = 60  # paragraphs of the large entity, one chunk or more each


def _big(version: str) -> str:
    paragraph = ("The zqbigx ledger records {v} entries of harbour lantern orchard granite meadow copper velvet "
                 "summit glacier prairie canyon beacon quarry thicket lagoon cobalt saffron juniper bramble. ")
    return "---\ntitle: The big ledger\n---\n" + "\n\n".join(paragraph.format(v=version) * 4 for _ in range(BIG))


@pytest.fixture
def live(transactional_db):
    org = Organization.objects.create(name=f"reindex-{uuid.uuid4().hex[:8]}")
    server, url = start_daphne(AIRWEAVE_WARM_UP="1", AIRWEAVE_SEARCH_RATE_LIMIT="", AIRWEAVE_RATE_LIMIT="")
    yield {"org": org, "url": url, "key": api_key_create(organization=org, name="drill").key}
    log = server.stop()
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.slow
def test_an_entity_is_findable_at_every_moment_of_its_reindex(live, tmp_path):
    root = tmp_path / "ledger"
    root.mkdir()
    (root / "big.md").write_text(_big("versionone"), encoding="utf-8")
    (root / "small.md").write_text("---\ntitle: Small\n---\nA small note about the zqbigx ledger.\n")
    connection = _connection(collection_create(organization=live["org"], name="Ledger", readable_id="ledger"), root)
    assert _sync(connection).status == "completed"

    answers, halt = [], threading.Event()

    def search():
        with httpx.Client(base_url=live["url"], headers={"X-API-Key": live["key"]}, timeout=60) as client:
            while not halt.is_set():
                r = client.post("/collections/ledger/search/instant",
                                json={"query": "zqbigx", "retrieval_strategy": "keyword", "limit": 1000})
                answers.append((r.status_code, r.json()))

    searcher = threading.Thread(target=search, daemon=True)
    searcher.start()
    try:
        for version in ("versiontwo", "versionthree"):
            (root / "big.md").write_text(_big(version), encoding="utf-8")
            job = _sync(connection)
            assert (job.status, job.entities_updated) == ("completed", 1), job.error
    finally:
        halt.set()
        searcher.join(60)

    chunks_of = {"versionthree": connection.entities.get(entity_id="big.md").chunks.count()}
    assert len(answers) > 5
    for status, body in answers:
        assert status == 200, body
        big = [r["textual_representation"] for r in body["results"]
               if r["airweave_system_metadata"]["original_entity_id"] == "big.md"]
        versions = {v for v in ("versionone", "versiontwo", "versionthree") if any(v in text for text in big)}
        assert len(versions) == 1, f"the entity vanished or was found twice: {versions}"
        version = versions.pop()
        assert len(big) == chunks_of.setdefault(version, len(big)), "a version found in part"
    print(f"{len(answers)} searches during two re-indexes; chunks per version seen: {chunks_of}")
