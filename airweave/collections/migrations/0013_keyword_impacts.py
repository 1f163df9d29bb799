"""Impact-ordered BM25 postings and stored document frequencies (docs/search.md, "Keyword leg").

* `collections_keyword_posting.impact`: the posting's BM25 term weight tf·(k1+1) / (tf + k1·(1 − b +
  b·dl/A₀)) at the collection's reference length A₀ (`collections_keyword_stats.impact_avgdl`, set
  once, by the first write). The index on (collection, term, impact DESC) lets a query read each
  term's best postings first and stop once the top k cannot change (search/retrieval.py).
* `collections_keyword_term`: df per (collection, term), incremented by the writer and decremented
  by the chunk delete trigger, so that no query counts postings.
* The (chunk_id, term) index replaces the (chunk_id) one: it serves cascaded deletes and the
  look-up of a candidate chunk's other query terms.

k1 = 1.2 and b = 0.5 are written into the backfill; they are airweave.collections.keyword_index's.
"""
from django.db import migrations, models

CREATE = """
ALTER TABLE collections_keyword_stats ADD COLUMN impact_avgdl double precision;
UPDATE collections_keyword_stats SET impact_avgdl = greatest(total_length::float8 / greatest(chunk_count, 1), 1);

ALTER TABLE collections_keyword_posting ADD COLUMN impact real;
UPDATE collections_keyword_posting p
SET impact = p.tf * (1.2 + 1) / (p.tf + 1.2 * (1 - 0.5 + 0.5 * p.dl / s.impact_avgdl))
FROM collections_keyword_stats s WHERE s.collection_id = p.collection_id;
UPDATE collections_keyword_posting SET impact = 0 WHERE impact IS NULL;
ALTER TABLE collections_keyword_posting ALTER COLUMN impact SET NOT NULL;

DROP INDEX keyword_posting_lookup;
CREATE INDEX keyword_posting_impact ON collections_keyword_posting (collection_id, term, impact DESC)
    INCLUDE (chunk_id, tf, dl);
DROP INDEX keyword_posting_chunk;
CREATE INDEX keyword_posting_chunk_term ON collections_keyword_posting (chunk_id, term) INCLUDE (tf, dl);

CREATE TABLE collections_keyword_term (
    collection_id uuid NOT NULL REFERENCES collections_collection(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    term text NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (collection_id, term)
);
INSERT INTO collections_keyword_term (collection_id, term, df)
SELECT collection_id, term, count(*) FROM collections_keyword_posting GROUP BY collection_id, term;

CREATE OR REPLACE FUNCTION collections_keyword_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The statistics row first: every writer of a collection locks it before its term rows,
    -- so concurrent writers never lock term rows in opposite orders.
    UPDATE collections_keyword_stats s
    SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
    FROM (SELECT collection_id, count(*) AS n, coalesce(sum(keyword_length), 0) AS len
          FROM deleted_chunks GROUP BY collection_id) d
    WHERE s.collection_id = d.collection_id;
    -- A chunk's postings are the lexemes of its text (keyword_index.index_chunks); they are gone
    -- by now (cascaded), so their terms are recomputed from the deleted rows.
    UPDATE collections_keyword_term t SET df = t.df - d.n
    FROM (SELECT c.collection_id, l.lexeme AS term, count(*) AS n
          FROM deleted_chunks c, unnest(to_tsvector('english', c.text)) AS l
          GROUP BY c.collection_id, l.lexeme) d
    WHERE t.collection_id = d.collection_id AND t.term = d.term;
    RETURN NULL;
END $$;
"""

DROP = """
CREATE OR REPLACE FUNCTION collections_keyword_stats_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE collections_keyword_stats s
    SET chunk_count = s.chunk_count - d.n, total_length = s.total_length - d.len
    FROM (SELECT collection_id, count(*) AS n, coalesce(sum(keyword_length), 0) AS len
          FROM deleted_chunks GROUP BY collection_id) d
    WHERE s.collection_id = d.collection_id;
    RETURN NULL;
END $$;
DROP TABLE IF EXISTS collections_keyword_term;
DROP INDEX IF EXISTS keyword_posting_chunk_term;
CREATE INDEX IF NOT EXISTS keyword_posting_chunk ON collections_keyword_posting (chunk_id);
DROP INDEX IF EXISTS keyword_posting_impact;
CREATE INDEX IF NOT EXISTS keyword_posting_lookup ON collections_keyword_posting (collection_id, term)
    INCLUDE (chunk_id, tf, dl);
ALTER TABLE collections_keyword_posting DROP COLUMN IF EXISTS impact;
ALTER TABLE collections_keyword_stats DROP COLUMN IF EXISTS impact_avgdl;
"""


class Migration(migrations.Migration):
    dependencies = [("collections", "0012_collection_written_lsn")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(CREATE, DROP)],
            state_operations=[
                migrations.AddField("keywordposting", "impact", models.FloatField(default=0)),
                migrations.AddField("keywordstats", "impact_avgdl", models.FloatField(null=True)),
                migrations.CreateModel(
                    name="KeywordTerm",
                    fields=[
                        ("pk", models.CompositePrimaryKey("collection_id", "term", blank=True, editable=False,
                                                          primary_key=True, serialize=False)),
                        ("collection_id", models.UUIDField()),
                        ("term", models.TextField()),
                        ("df", models.IntegerField()),
                    ],
                    options={"db_table": "collections_keyword_term"},
                ),
            ],
        )
    ]
