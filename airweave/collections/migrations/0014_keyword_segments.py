"""Keyword segments: each term's postings of a collection packed into one row (docs/search.md,
"The keyword leg at scale").

* `collections_keyword_doc`: a chunk's ordinal in its collection (1, 2, ...), given by the keyword
  writer from `collections_keyword_stats.next_ord` and never reused, with the chunk's id and
  entity. A narrow table (not a column of the wide chunk row, which every update rewrites whole):
  a segment names chunks by ordinal and a query turns its best ordinals back into chunks here.
  It goes with its chunk (ON DELETE CASCADE).
* `collections_keyword_segment`: one row per collection that has a segment; it holds the chunks
  with ordinal <= max_ord (the ones written later are the segment's delta).
* `collections_keyword_segment_term`: per (collection, term), the postings of those chunks as three
  packed big-endian arrays: ordinals (int4), term frequencies (int2) and chunk lengths (int2, at most
  32,767). Stored uncompressed (STORAGE EXTERNAL): they do not compress, and reading them is the
  query's cost.
"""
from django.db import migrations, models

CREATE = """
CREATE TABLE collections_keyword_doc (
    collection_id uuid NOT NULL,
    ord integer NOT NULL,
    chunk_id uuid NOT NULL UNIQUE REFERENCES collections_chunk(id) ON DELETE CASCADE,
    entity_id uuid NOT NULL,
    PRIMARY KEY (collection_id, ord)
);
INSERT INTO collections_keyword_doc (collection_id, ord, chunk_id, entity_id)
SELECT collection_id, row_number() OVER (PARTITION BY collection_id ORDER BY id), id, entity_id FROM collections_chunk;

ALTER TABLE collections_keyword_stats ADD COLUMN next_ord integer NOT NULL DEFAULT 1;
UPDATE collections_keyword_stats s
SET next_ord = coalesce((SELECT max(ord) + 1 FROM collections_keyword_doc d WHERE d.collection_id = s.collection_id), 1);

CREATE TABLE collections_keyword_segment (
    collection_id uuid PRIMARY KEY REFERENCES collections_collection(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    max_ord integer NOT NULL,
    chunk_count integer NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE collections_keyword_segment_term (
    collection_id uuid NOT NULL REFERENCES collections_keyword_segment(collection_id) ON DELETE CASCADE,
    term text NOT NULL,
    postings integer NOT NULL,
    ords bytea NOT NULL,
    tfs bytea NOT NULL,
    dls bytea NOT NULL,
    PRIMARY KEY (collection_id, term)
);
ALTER TABLE collections_keyword_segment_term
    ALTER COLUMN ords SET STORAGE EXTERNAL, ALTER COLUMN tfs SET STORAGE EXTERNAL, ALTER COLUMN dls SET STORAGE EXTERNAL;
"""

DROP = """
DROP TABLE IF EXISTS collections_keyword_segment_term;
DROP TABLE IF EXISTS collections_keyword_segment;
ALTER TABLE collections_keyword_stats DROP COLUMN IF EXISTS next_ord;
DROP TABLE IF EXISTS collections_keyword_doc;
"""


class Migration(migrations.Migration):
    dependencies = [("collections", "0013_keyword_impacts")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(CREATE, DROP)],
            state_operations=[
                migrations.AddField("keywordstats", "next_ord", models.IntegerField(default=1)),
                migrations.CreateModel(
                    name="KeywordDoc",
                    fields=[
                        ("pk", models.CompositePrimaryKey("collection_id", "ord", blank=True, editable=False,
                                                          primary_key=True, serialize=False)),
                        ("collection_id", models.UUIDField()),
                        ("ord", models.IntegerField()),
                        ("chunk_id", models.UUIDField(unique=True)),
                        ("entity_id", models.UUIDField()),
                    ],
                    options={"db_table": "collections_keyword_doc"},
                ),
                migrations.CreateModel(
                    name="KeywordSegment",
                    fields=[
                        ("collection_id", models.UUIDField(primary_key=True, serialize=False)),
                        ("max_ord", models.IntegerField()),
                        ("chunk_count", models.IntegerField()),
                        ("built_at", models.DateTimeField()),
                    ],
                    options={"db_table": "collections_keyword_segment"},
                ),
                migrations.CreateModel(
                    name="KeywordSegmentTerm",
                    fields=[
                        ("pk", models.CompositePrimaryKey("collection_id", "term", blank=True, editable=False,
                                                          primary_key=True, serialize=False)),
                        ("collection_id", models.UUIDField()),
                        ("term", models.TextField()),
                        ("postings", models.IntegerField()),
                        ("ords", models.BinaryField()),
                        ("tfs", models.BinaryField()),
                        ("dls", models.BinaryField()),
                    ],
                    options={"db_table": "collections_keyword_segment_term"},
                ),
            ],
        )
    ]
