"""Per-collection BM25 statistics: chunk count N and total length (for avgdl), kept exact.

Increments are written with the postings (airweave.collections.keyword_index); a statement-
level trigger subtracts deleted chunks (cascaded deletes included), so no query ever has to
count a collection's chunks.
"""
from django.db import migrations

CREATE = """
CREATE TABLE collections_keyword_stats (
    collection_id uuid PRIMARY KEY REFERENCES collections_collection(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    chunk_count bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0
);
INSERT INTO collections_keyword_stats (collection_id, chunk_count, total_length)
SELECT collection_id, count(*), coalesce(sum(keyword_length), 0) FROM collections_chunk GROUP BY collection_id;

CREATE FUNCTION collections_keyword_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections_keyword_stats s
    SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
    FROM (SELECT collection_id, count(*) AS n, coalesce(sum(keyword_length), 0) AS len
          FROM deleted_chunks GROUP BY collection_id) d
    WHERE s.collection_id = d.collection_id;
    RETURN NULL;
END $$;

CREATE TRIGGER collections_chunk_keyword_stats_delete
AFTER DELETE ON collections_chunk
REFERENCING OLD TABLE AS deleted_chunks
FOR EACH STATEMENT EXECUTE FUNCTION collections_keyword_stats_on_delete();
"""
DROP = """
DROP TRIGGER IF EXISTS collections_chunk_keyword_stats_delete ON collections_chunk;
DROP FUNCTION IF EXISTS collections_keyword_stats_on_delete();
DROP TABLE IF EXISTS collections_keyword_stats;
"""


class Migration(migrations.Migration):
    dependencies = [("collections", "0003_keyword_postings")]
    operations = [migrations.RunSQL(CREATE, DROP)]
