"""Instant search strategies on a small corpus of clearly distinct topics, with real local embeddings.

hybrid / semantic / keyword each put the relevant document first; keyword finds an exact rare
term; semantic finds a paraphrase that shares no word with the document; pagination happens
after fusion; collapse_entities keeps one chunk per entity.
"""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from django.test import override_settings

from airweave.collections.models import Chunk
from airweave.collections.services import ChunkRecord, EntityRecord, collection_create, entities_write
from airweave.tenancy.models import Organization
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from airweave.providers.embeddings import get_embedder
from search.instant import InstantSearchRequest, SearchRequestError, hydrate, search_instant
from search.retrieval import RetrievalQuery, retrieve

pytestmark = pytest.mark.django_db

LONG_TOPIC = (
    "Beekeeping journal. The honeybee colony in hive number three produced comb and honey all summer. "
    "We inspected the brood frames every week, looked for the queen bee and checked for varroa mites. "
    "In autumn the beekeeper harvested the honey supers, extracted the honey and fed the bees sugar syrup. "
    "During winter the bees cluster together to keep the queen warm inside the hive. "
    "In spring the colony grows quickly; a swarm may leave the hive with the old queen. "
    "A good beekeeper adds supers before the nectar flow and watches for swarm cells on the frames. "
)
FILES = {
    "kitchen/sourdough.md": "# Sourdough bread\nFeed the starter with flour and water, let the dough rise "
                            "overnight, then bake the loaf in a hot Dutch oven.",
    "garage/bicycle.md": "# Bicycle repair\nTo fix a flat tyre, remove the wheel, find the puncture in the inner "
                         "tube and glue a rubber patch over it.",
    "space/jupiter.txt": "Jupiter is the largest planet of the solar system; its Great Red Spot is a giant storm "
                         "larger than the Earth.",
    "warehouse/inventory.txt": "Inventory memo: the conveyor in aisle four needs spare part QX7734 before Friday. "
                               "Order it from the usual supplier.",
    "pets/afternoon.txt": "The feline dozed on the windowsill, warmed by the afternoon sun.",
    "finance/taxes.md": "# Tax return\nFile the annual income tax return before the April deadline and keep "
                        "receipts for deductible expenses.",
    "hobbies/beekeeping.md": LONG_TOPIC * 2,
}


@pytest.fixture(scope="module")
def corpus(django_db_setup, django_db_blocker, tmp_path_factory):
    """One synced collection for the module (committed, deleted at the end). Small chunks so the
    beekeeping journal spans several of them."""
    root = tmp_path_factory.mktemp("strategies") / "docs"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    with django_db_blocker.unblock(), override_settings(AIRWEAVE_CHUNK_TOKENS=64, AIRWEAVE_CHUNK_OVERLAP_TOKENS=8):
        org = Organization.objects.create(name=f"strategies-{uuid.uuid4().hex[:8]}")
        try:
            collection = collection_create(organization=org, name="Strategy corpus", readable_id="corpus")
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(root)}, sync_immediately=False, for_api=False)
            job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
            assert job.status == "completed", job.error
            assert job.entities_inserted == len(FILES)
            long_chunks = Chunk.objects.filter(collection=collection, original_entity_id="hobbies/beekeeping.md").count()
            assert long_chunks >= 4, long_chunks
        except BaseException:
            org.delete()
            raise
    yield SimpleNamespace(collection=collection, long_chunks=long_chunks)
    with django_db_blocker.unblock():
        org.delete()


def search(corpus, query, strategy="hybrid", **kw):
    """The full instant search service (validation, query embedding, retrieval, shaping)."""
    return search_instant(collection=corpus.collection, principals=None,
                          request=InstantSearchRequest(query=query, retrieval_strategy=strategy, **kw)).results


_VECTORS: dict[str, list] = {}


def run(corpus, query, strategy="hybrid", limit=100, offset=0, collapse_entities=False):
    """The same retrieval and shaping as search_instant, with each distinct query embedded once per
    module: most tests here ask the same query many times (pages), and embedding is the slow part."""
    vector = None
    if strategy != "keyword":
        if query not in _VECTORS:
            _VECTORS[query] = get_embedder(corpus.collection.embedding_model_name).embed([query])[0]
        vector = _VECTORS[query]
    return hydrate(retrieve(RetrievalQuery(
        collection_id=corpus.collection.id, dims=corpus.collection.vector_size, text=query, query_vector=vector,
        strategy=strategy, limit=limit, offset=offset, collapse=collapse_entities)))


def originals(results):
    return [r["airweave_system_metadata"]["original_entity_id"] for r in results]


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "keyword"])
@pytest.mark.parametrize("query, expected", [
    ("how to bake sourdough bread with a starter", "kitchen/sourdough.md"),
    ("repair a puncture in a bicycle tyre", "garage/bicycle.md"),
    ("largest planet Jupiter storm", "space/jupiter.txt"),
    ("income tax return deadline", "finance/taxes.md"),
    ("honey bees and the queen in the hive", "hobbies/beekeeping.md"),
])
def test_every_strategy_puts_the_relevant_document_first(corpus, strategy, query, expected):
    results = search(corpus, query, strategy, limit=5)
    assert results, (strategy, query)
    assert originals(results)[0] == expected, (strategy, query, originals(results))


def test_scores_are_descending_for_every_strategy(corpus):
    for strategy in ("hybrid", "semantic", "keyword"):
        scores = [r["relevance_score"] for r in run(corpus, "bread planet tyre", strategy)]
        assert scores == sorted(scores, reverse=True)
        assert all(isinstance(s, float) for s in scores)


def test_keyword_finds_an_exact_rare_term(corpus):
    results = search(corpus, "QX7734", "keyword")
    assert originals(results) == ["warehouse/inventory.txt"]  # only the document holding the term
    assert results[0]["relevance_score"] > 0
    assert originals(run(corpus, "QX7734", "hybrid"))[0] == "warehouse/inventory.txt"


def test_keyword_is_stemmed_and_case_insensitive(corpus):
    assert originals(run(corpus, "PUNCTURES tyres", "keyword"))[0] == "garage/bicycle.md"


def test_keyword_without_any_matching_term_returns_nothing(corpus):
    assert run(corpus, "xylophone zebra", "keyword") == []


def test_semantic_finds_a_paraphrase_with_no_shared_words(corpus):
    query = "a cat napping by a window"
    assert run(corpus, query, "keyword") == []  # no word in common with the document
    assert originals(search(corpus, query, "semantic"))[0] == "pets/afternoon.txt"
    assert originals(run(corpus, query, "hybrid"))[0] == "pets/afternoon.txt"


def test_semantic_returns_every_chunk_when_the_limit_allows(corpus):
    total = Chunk.objects.filter(collection=corpus.collection).count()
    results = run(corpus, "anything at all", "semantic", limit=1000)
    assert len(results) == total
    assert len({r["entity_id"] for r in results}) == total


def test_hybrid_combines_both_legs(corpus):
    # The rare code only the keyword leg can match, and the topic only the vector leg can: the
    # hybrid ranking puts both documents at the top.
    top = originals(run(corpus, "QX7734 feline", "hybrid", limit=2))
    assert set(top) == {"warehouse/inventory.txt", "pets/afternoon.txt"}


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "keyword"])
def test_pagination_slices_the_fused_ranking(corpus, strategy):
    query = "honey bees bread planet tax tyre"
    full = [r["entity_id"] for r in run(corpus, query, strategy, limit=1000)]
    assert len(full) >= 6
    pages = [[r["entity_id"] for r in run(corpus, query, strategy, limit=4, offset=offset)]
             for offset in range(0, len(full), 4)]
    assert [e for page in pages for e in page] == full
    seen = set()
    for page in pages:
        assert not seen & set(page)  # disjoint
        seen |= set(page)
    assert run(corpus, query, strategy, limit=4, offset=len(full)) == []
    # The service pages the same way.
    assert [r["entity_id"] for r in search(corpus, query, strategy, limit=4, offset=4)] == pages[1]


def test_large_page_depth_is_not_truncated_by_the_candidate_depth(corpus):
    total = Chunk.objects.filter(collection=corpus.collection).count()
    tail = run(corpus, "bees", "semantic", limit=5, offset=total - 2)
    assert len(tail) == 2


@pytest.mark.parametrize("strategy", ["hybrid", "semantic", "keyword"])
def test_collapse_entities_keeps_one_chunk_per_entity(corpus, strategy):
    query = "beekeeper honey queen hive swarm"
    plain = run(corpus, query, strategy, limit=100)
    assert originals(plain).count("hobbies/beekeeping.md") >= 2  # several chunks of the long file
    collapsed = run(corpus, query, strategy, limit=100, collapse_entities=True)
    ids = originals(collapsed)
    assert len(ids) == len(set(ids))
    assert ids[0] == "hobbies/beekeeping.md"
    # The chunk kept for an entity is its best-ranked one.
    best_chunk = next(r["entity_id"] for r in plain if r["airweave_system_metadata"]["original_entity_id"]
                      == "hobbies/beekeeping.md")
    assert collapsed[0]["entity_id"] == best_chunk
    if strategy == "hybrid":  # the service passes the flag through
        assert originals(search(corpus, query, strategy, limit=100, collapse_entities=True)) == ids
    # Pages of a collapsed ranking are disjoint slices too.
    first = run(corpus, query, strategy, limit=1, collapse_entities=True)
    second = run(corpus, query, strategy, limit=1, offset=1, collapse_entities=True)
    assert [r["entity_id"] for r in first + second] == [r["entity_id"] for r in collapsed[:2]]


def test_results_of_other_collections_never_appear(corpus, make_collection):
    empty = make_collection(readable_id="empty")
    assert search_instant(collection=empty, principals=None, request=InstantSearchRequest(query="bread")).results == []


@pytest.mark.parametrize("kw, loc", [
    ({"query": "   "}, ["query"]),
    ({"query": "ok", "retrieval_strategy": "neural"}, ["retrieval_strategy"]),
    ({"query": "ok", "limit": 0}, ["limit"]),
    ({"query": "ok", "limit": 1001}, ["limit"]),
    ({"query": "ok", "offset": -1}, ["offset"]),
    ({"query": "x" * 2001}, ["query"]),
])
def test_service_refuses_bad_requests(corpus, kw, loc):
    with pytest.raises(SearchRequestError) as info:
        search_instant(collection=corpus.collection, principals=None, request=InstantSearchRequest(**kw))
    assert info.value.loc == loc


def test_collapse_finds_every_entity_even_behind_a_very_long_one(make_collection, write_files):
    # Written with the model-level service (entities_write) rather than a sync: this is about the
    # keyword leg and collapse, and embedding 300+ chunks would only slow the test down.
    collection = make_collection(readable_id="deep")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(write_files({"x.md": "x"}))},
                                          sync_immediately=False, for_api=False)
    unit = [1.0] + [0.0] * (collection.vector_size - 1)
    big = EntityRecord(entity_id="big.md", entity_type="LocalFileEntity", name="big.md", content_hash="b",
                       chunks=[ChunkRecord(text=f"Zebra zebra grazing, part {i}.", embedding=unit) for i in range(320)])
    small = EntityRecord(entity_id="small.txt", entity_type="LocalFileEntity", name="small.txt", content_hash="s",
                         chunks=[ChunkRecord(text="A zebra appears once in this longer sentence about other things.",
                                             embedding=unit)])
    entities_write(source_connection=connection, sync_id=connection.sync.id, sync_job_id=None, records=[big, small])
    plain = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query="zebra", retrieval_strategy="keyword", limit=1000)).results
    assert set(originals(plain)) == {"big.md", "small.txt"}
    results = search_instant(collection=collection, principals=None, request=InstantSearchRequest(
        query="zebra", retrieval_strategy="keyword", limit=10, collapse_entities=True)).results
    assert originals(results) == ["big.md", "small.txt"]
