"""The BM25 inverted index: one row per (chunk, stemmed term) with its term frequency.

`dl` (the chunk's length in indexed terms) is copied into each posting so that scoring needs
no join; the covering index on (collection_id, term) lets a query read only the postings of
its own terms (an index-only scan). Deleting a chunk deletes its postings in the database.
"""
from django.db import migrations

CREATE = """
CREATE TABLE collections_keyword_posting (
    collection_id uuid NOT NULL,
    term text NOT NULL,
    chunk_id uuid NOT NULL REFERENCES collections_chunk(id) ON DELETE CASCADE,
    tf smallint NOT NULL,
    dl integer NOT NULL
);
CREATE INDEX keyword_posting_lookup ON collections_keyword_posting (collection_id, term) INCLUDE (chunk_id, tf, dl);
CREATE INDEX keyword_posting_chunk ON collections_keyword_posting (chunk_id);
"""
DROP = "DROP TABLE IF EXISTS collections_keyword_posting;"


class Migration(migrations.Migration):
    dependencies = [("collections", "0002_initial")]
    operations = [migrations.RunSQL(CREATE, DROP)]
