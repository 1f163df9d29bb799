"""What the drills assert about an index: the state of a connection's entities, chunks and postings."""
from __future__ import annotations

from collections import Counter

from django.db import connection as db

from airweave.collections.models import Chunk, Entity, KeywordStats


def index_state(source_connection) -> dict:
    """{entity_id: [chunk texts in chunk_index order]} of a connection; asserts the index's own
    integrity on the way: one row per entity, chunk indexes 0..n-1 without gaps or repeats, every
    chunk on an entity of this connection, every chunk with its keyword postings and vector, and
    the collection's BM25 statistics equal to its chunks."""
    ids = list(Entity.objects.filter(source_connection=source_connection).values_list("entity_id", flat=True))
    assert not [i for i, n in Counter(ids).items() if n > 1], "an entity is indexed twice"
    state: dict[str, list[str]] = {i: [] for i in ids}
    rows = (Chunk.objects.filter(source_connection_id=source_connection.id)
            .order_by("original_entity_id", "chunk_index")
            .values_list("original_entity_id", "chunk_index", "text", "entity__source_connection_id"))
    for entity_id, index, text, owner in rows:
        assert owner == source_connection.id and entity_id in state, f"orphan chunk of {entity_id!r}"
        assert index == len(state[entity_id]), f"chunk indexes of {entity_id!r} have a gap or a repeat"
        state[entity_id].append(text)
    assert all(state.values()), "an entity without chunks"
    with db.cursor() as cursor:
        cursor.execute("""SELECT count(*) FROM collections_chunk c WHERE c.source_connection_id = %s
                          AND (c.embedding IS NULL OR NOT EXISTS
                               (SELECT 1 FROM collections_keyword_posting p WHERE p.chunk_id = c.id))""",
                       [source_connection.id])
        assert cursor.fetchone()[0] == 0, "a chunk without its vector or keyword postings"
    stats = KeywordStats.objects.filter(collection_id=source_connection.collection_id).first()
    chunks = Chunk.objects.filter(collection_id=source_connection.collection_id).count()
    assert (stats.chunk_count if stats else 0) == chunks, "BM25 statistics differ from the chunks"
    return state
