"""Insert / update / keep / delete driven by content hashes, across edits, deletions and renames."""
from airweave.collections.models import Chunk, Entity
from airweave.providers.local_embeddings import get_local_embedder

FILES = {
    "guide/leave.md": "---\ntitle: Leave policy\n---\nRequest annual leave through the HR portal two weeks ahead.",
    "guide/travel.md": "# Travel\nBook travel with the agency. Keep your receipts for reimbursement.",
    "notes.txt": "Quarterly planning notes: roadmap, hiring and budget.",
}


def test_first_sync_inserts_everything(make_collection, sync_folder, write_files):
    root = write_files(FILES)
    _, job = sync_folder(make_collection(), root)
    assert job.status == "completed"
    assert (job.entities_inserted, job.entities_updated, job.entities_kept, job.entities_deleted) == (3, 0, 0, 0)
    leave = Entity.objects.get(entity_id="guide/leave.md")
    assert leave.name == "Leave policy"
    assert leave.breadcrumbs == [{"entity_id": "guide", "name": "guide", "entity_type": "LocalFolderEntity"}]
    assert leave.web_url == (root / "guide/leave.md").as_uri()
    assert Chunk.objects.filter(entity=leave).count() >= 1


def test_unchanged_resync_keeps_everything_and_embeds_nothing(make_collection, sync_folder, write_files):
    root = write_files(FILES)
    connection, _ = sync_folder(make_collection(), root)
    embedder = get_local_embedder()
    calls_before = embedder.calls
    _, job = sync_folder(None, root, connection=connection)
    assert (job.entities_inserted, job.entities_updated, job.entities_kept, job.entities_deleted) == (0, 0, 3, 0)
    assert job.chunks_embedded == 0
    assert embedder.calls == calls_before


def test_edit_delete_and_rename(make_collection, sync_folder, write_files):
    root = write_files(FILES)
    connection, _ = sync_folder(make_collection(), root)
    old_chunk_ids = set(Chunk.objects.filter(entity__entity_id="guide/travel.md").values_list("id", flat=True))

    (root / "guide/travel.md").write_text("# Travel\nBook trains, not planes, for trips under 500 km.")
    (root / "notes.txt").rename(root / "planning.txt")
    _, job = sync_folder(None, root, connection=connection)

    assert (job.entities_inserted, job.entities_updated, job.entities_kept, job.entities_deleted) == (1, 1, 1, 1)
    travel_chunks = Chunk.objects.filter(entity__entity_id="guide/travel.md")
    assert not old_chunk_ids & set(travel_chunks.values_list("id", flat=True))
    assert "trains" in " ".join(travel_chunks.values_list("text", flat=True))
    assert not Entity.objects.filter(entity_id="notes.txt").exists()
    assert Entity.objects.filter(entity_id="planning.txt").exists()


def test_partial_listing_guard_keeps_entities(make_collection, sync_folder, write_files):
    files = {f"doc{i}.md": f"Document number {i} about topic {i}." for i in range(6)}
    root = write_files(files)
    connection, _ = sync_folder(make_collection(), root)
    for i in range(1, 6):
        (root / f"doc{i}.md").unlink()
    _, job = sync_folder(None, root, connection=connection)
    assert job.status == "completed"
    assert job.entities_deleted == 0
    assert Entity.objects.filter(source_connection=connection).count() == 6
    assert "partial listing guard" in job.error_details["notes"][0]

    _, forced = sync_folder(None, root, connection=connection, force_full_sync=True)
    assert forced.entities_deleted == 5
    assert Entity.objects.filter(source_connection=connection).count() == 1
