"""BM25 statistics (chunk count, total length, document frequencies) stay exact through inserts,
updates and deletes."""
from django.db import connection

from airweave.collections.models import Chunk


def _stats(collection):
    with connection.cursor() as cur:
        cur.execute("SELECT chunk_count, total_length FROM collections_keyword_stats WHERE collection_id = %s",
                    [collection.id])
        return cur.fetchone()


def _actual(collection):
    chunks = Chunk.objects.filter(collection=collection)
    return chunks.count(), sum(chunks.values_list("keyword_length", flat=True))


def _document_frequencies(collection):
    """(stored df of each term with df > 0, df counted over the postings)."""
    with connection.cursor() as cur:
        cur.execute("SELECT term, df FROM collections_keyword_term WHERE collection_id = %s AND df > 0",
                    [collection.id])
        stored = dict(cur.fetchall())
        cur.execute("SELECT term, count(*) FROM collections_keyword_posting WHERE collection_id = %s GROUP BY term",
                    [collection.id])
        return stored, dict(cur.fetchall())


def test_stats_follow_inserts_updates_and_deletes(make_collection, sync_folder, write_files):
    collection = make_collection()
    root = write_files({"a.md": "Alpha beta gamma delta.", "b.md": "Epsilon zeta eta theta iota.",
                        "c.md": "Kappa lambda mu."})
    connection_, _ = sync_folder(collection, root)
    assert _stats(collection) == _actual(collection)
    assert _stats(collection)[0] == 3
    stored, counted = _document_frequencies(collection)
    assert stored == counted and stored["alpha"] == 1

    (root / "a.md").write_text("Alpha beta gamma delta, now with a longer text about sigma and tau.")
    (root / "c.md").unlink()
    sync_folder(None, root, connection=connection_)
    assert _stats(collection) == _actual(collection)
    assert _stats(collection)[0] == 2
    stored, counted = _document_frequencies(collection)
    assert stored == counted and "kappa" not in stored and stored["sigma"] == 1

    connection_.delete()
    assert _stats(collection) == (0, 0)
    assert _document_frequencies(collection) == ({}, {})


def test_postings_hold_stemmed_terms_with_frequencies(make_collection, sync_folder, write_files):
    collection = make_collection()
    sync_folder(collection, write_files({"run.md": "Running runners run. The runner runs."}))
    with connection.cursor() as cur:
        cur.execute("SELECT term, tf FROM collections_keyword_posting WHERE collection_id = %s ORDER BY term",
                    [collection.id])
        postings = dict(cur.fetchall())
    assert postings["run"] == 3  # running, run, runs
    assert postings["runner"] == 2
    assert "the" not in postings


def test_a_sync_job_heals_drifted_statistics(make_collection, sync_folder, write_files):
    collection = make_collection()
    connection_, _ = sync_folder(collection, write_files({"a.md": "Alpha beta.", "b.md": "Gamma delta epsilon."}))
    with connection.cursor() as cur:
        cur.execute("UPDATE collections_keyword_stats SET chunk_count = 999, total_length = 5 WHERE collection_id = %s",
                    [collection.id])
    sync_folder(None, None, connection=connection_)
    assert _stats(collection) == _actual(collection)
