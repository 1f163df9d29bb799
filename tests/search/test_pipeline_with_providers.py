"""The search pipeline end to end with its providers played by local vendor servers (real SDKs).

A small folder is synced (real local embeddings), then `search_pipeline` runs with server A as
OpenAI (expansion, interpretation, answer), server B as Groq (the next provider in those chains)
and server C as Cohere (rerank). The tests check what each operation did with the vendor's reply,
which provider answered (`state.provider_used`), the events of docs/api.md, and the keyless mode:
local embeddings, skipped language-model operations (each with its reason) and an extractive,
cited answer.
"""
from __future__ import annotations

import re

import pytest

from search.pipeline import PipelineRequest, search_pipeline
from tests.providers.vendor_server import configure_provider, hermetic_providers, vendor_server  # noqa: F401

pytestmark = pytest.mark.django_db

OPENAI = "openai/gpt-4.1-mini"
GROQ = "groq/llama-3.3-70b-versatile"
COHERE = "cohere/rerank-v3.5"
LOCAL_EMBEDDER = "local/all-MiniLM-L6-v2"
CHAT = "/v1/chat/completions"

FILES = {
    "kitchen/sourdough.md": "# Sourdough bread\nFeed the starter with flour and water, let the dough rise "
                            "overnight, then bake the loaf in a hot Dutch oven.",
    "kitchen/pancakes.md": "# Pancakes\nWhisk eggs, milk and flour into a smooth batter. Fry thin pancakes in "
                           "butter and serve them with lemon.",
    "garage/bicycle.md": "# Bicycle repair\nTo fix a flat tyre, remove the wheel, find the puncture in the inner "
                         "tube and glue a rubber patch over it.",
    "space/jupiter.txt": "Jupiter is the largest planet of the solar system. Its Great Red Spot is a giant storm "
                         "larger than the Earth.",
    "warehouse/inventory.txt": "Inventory memo: the conveyor in aisle four needs spare part QX7734 before Friday. "
                               "Order it from the usual supplier.",
    "pets/afternoon.txt": "The feline dozed on the windowsill, warmed by the afternoon sun.",
}


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    """No provider keys from the environment, short timeouts, a reset circuit breaker."""
    yield


@pytest.fixture
def collection(make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="providers-docs")
    _, job = sync_folder(collection, write_files(FILES))
    assert job.status == "completed", job.error
    assert job.entities_inserted == len(FILES)
    return collection


@pytest.fixture
def vendors(vendor_server, monkeypatch):
    """Server A as OpenAI, server B as Groq, server C as Cohere (keys and base URLs in the environment)."""
    a, b, c = vendor_server("openai"), vendor_server("groq"), vendor_server("cohere")
    configure_provider(monkeypatch, "openai", a, key="sk-openai-test")
    configure_provider(monkeypatch, "groq", b, key="gsk-groq-test")
    configure_provider(monkeypatch, "cohere", c, key="co-cohere-test")
    return a, b, c


def run(collection, query, **flags):
    defaults = {"expand_query": False, "interpret_filters": False, "rerank": False, "generate_answer": False}
    return search_pipeline(collection=collection, principals=None, request=PipelineRequest(query=query, **{**defaults, **flags}))


def events_of(response, type_):
    return [e for e in response.events if e["type"] == type_]


def one_event(response, type_):
    found = events_of(response, type_)
    assert len(found) == 1, (type_, [e["type"] for e in response.events])
    return found[0]


def files_of(response) -> list[str]:
    return [r["system_metadata"]["original_entity_id"] for r in response.results]


def folders_of(result) -> set[str]:
    return {b["name"] for b in result["breadcrumbs"]}


def assert_skips_are_reported(response):
    """Every operation in state.skipped has an operator_end carrying that reason, and only those do."""
    ends = {e["name"]: e for e in events_of(response, "operator_end")}
    reported = {name: e["skipped"] for name, e in ends.items() if "skipped" in e}
    assert reported == response.state.skipped
    assert all(reason for reason in reported.values())


# -- query expansion -----------------------------------------------------------------------------

def test_expansion_alternatives_are_retrieved(collection, vendors):
    a, _, _ = vendors
    query = "spare part QX7734"
    alternatives = ["a cat sleeping on the windowsill", "feline dozing in the afternoon sun", "sleepy cat"]
    a.json_replies["query_expansion"] = {"alternatives": alternatives}

    baseline = run(collection, query, limit=3)
    expanded = run(collection, query, limit=3, expand_query=True)

    assert "pets/afternoon.txt" not in files_of(baseline)  # no word of the query matches it
    assert "pets/afternoon.txt" in files_of(expanded)  # the alternative brought it in
    event = one_event(expanded, "expansion_done")
    assert event["alternatives"] == alternatives
    assert expanded.state.alternatives == alternatives
    assert one_event(expanded, "embedding_done")["count"] == 4  # the query and its alternatives
    assert expanded.state.provider_used["query_expansion"] == OPENAI
    [request] = a.requests_to(CHAT)
    assert request.bearer == "sk-openai-test"
    assert request.body["model"] == "gpt-4.1-mini"
    assert request.body["response_format"]["json_schema"]["name"] == "query_expansion"
    assert "Query: spare part QX7734" in request.body["messages"][1]["content"]


def test_expansion_drops_duplicates_of_the_query_and_keeps_at_most_the_configured_number(collection, vendors):
    a, _, _ = vendors
    a.json_replies["query_expansion"] = {"alternatives": ["Bread Recipe", "  sourdough   loaf ", "sourdough loaf",
                                                          "", "starter", "levain", "boule", "crust"]}

    response = run(collection, "bread recipe", expand_query=True)

    assert response.state.alternatives == ["sourdough loaf", "starter", "levain", "boule"]


# -- query interpretation ------------------------------------------------------------------------

def interpretation(confidence, folder="kitchen"):
    return {"filters": [{"field": "breadcrumbs.name", "operator": "equals", "value": folder}],
            "confidence": confidence}


def test_interpretation_at_high_confidence_restricts_the_results(collection, vendors):
    a, _, _ = vendors
    a.json_replies["query_interpretation"] = interpretation(0.9)

    response = run(collection, "recipes from my kitchen folder", interpret_filters=True)

    assert sorted(files_of(response)) == ["kitchen/pancakes.md", "kitchen/sourdough.md"]
    assert all("kitchen" in folders_of(r) for r in response.results)
    assert events_of(response, "interpretation_skipped") == []
    assert response.state.interpretation_confidence == 0.9
    assert response.state.provider_used["query_interpretation"] == OPENAI
    assert "query_interpretation" not in response.state.skipped
    [request] = a.requests_to(CHAT)
    assert request.body["response_format"]["json_schema"]["name"] == "query_interpretation"
    prompt = request.body["messages"][1]["content"]
    assert "kitchen" in prompt and "warehouse" in prompt  # the collection's real values are offered


def test_interpretation_below_the_threshold_is_skipped_with_reason_and_confidence(collection, vendors):
    a, _, _ = vendors
    a.json_replies["query_interpretation"] = interpretation(0.5)

    response = run(collection, "recipes from my kitchen folder", interpret_filters=True)

    assert len(response.results) == len(FILES)  # not restricted
    event = one_event(response, "interpretation_skipped")
    assert event["confidence"] == 0.5
    assert "0.50" in event["reason"] and "0.7" in event["reason"]
    end = next(e for e in events_of(response, "operator_end") if e["name"] == "query_interpretation")
    assert "confidence" in end["skipped"]
    assert_skips_are_reported(response)


def test_interpretation_with_a_value_not_in_the_collection_is_skipped(collection, vendors):
    a, _, _ = vendors
    a.json_replies["query_interpretation"] = interpretation(0.95, folder="attic")

    response = run(collection, "things in the attic", interpret_filters=True)

    assert len(response.results) == len(FILES)
    event = one_event(response, "interpretation_skipped")
    assert event["reason"] == "no filter fits the query" and event["confidence"] == 0.95



def test_interpretation_offers_the_busiest_folders_not_the_first_ones_alphabetically(
        make_collection, sync_folder, write_files, vendors):
    """35 folders of one note each, and the travel folder with three: the model may pick it, and
    the filter applies, although 30 folder names sort before it."""
    a, _, _ = vendors
    files = {f"area-{i:02d}/note.md": f"# Note {i}\nA short note number {i} about trips and plans." for i in range(35)}
    files.update({f"travel/trip-{i}.md": f"# Trip {i}\nBook trip {i} through the travel agency." for i in range(3)})
    collection = make_collection(readable_id="many-folders")
    sync_folder(collection, write_files(files))
    a.json_replies["query_interpretation"] = interpretation(0.9, folder="travel")

    response = run(collection, "trips in the travel folder", interpret_filters=True, limit=10)

    prompt = a.requests_to(CHAT)[0].body["messages"][1]["content"]
    offered = next(line for line in prompt.splitlines() if line.startswith("- breadcrumbs.name:"))
    assert offered.startswith("- breadcrumbs.name: travel, area-00")  # three entities under it: listed first
    assert len(offered.split(": ", 1)[1].split(", ")) == 30
    assert events_of(response, "interpretation_skipped") == []
    assert sorted(files_of(response)) == ["travel/trip-0.md", "travel/trip-1.md", "travel/trip-2.md"]

# -- reranking -----------------------------------------------------------------------------------

def test_rerank_reorders_the_results_per_the_servers_ranking(collection, vendors):
    _, _, c = vendors
    preference = ["Jupiter", "conveyor", "feline"]  # deliberately unrelated to the query

    def scores(query, documents):
        return [next((0.9 - 0.1 * i for i, word in enumerate(preference) if word in d), 0.01) for d in documents]

    c.rerank_scores = scores

    response = run(collection, "sourdough bread", rerank=True, limit=3)

    assert files_of(response) == ["space/jupiter.txt", "warehouse/inventory.txt", "pets/afternoon.txt"]
    assert [r["score"] for r in response.results] == pytest.approx([0.9, 0.8, 0.7])
    event = one_event(response, "reranking_done")
    assert event["applied"] is True
    [request] = c.requests_to("/v2/rerank")
    assert request.bearer == "co-cohere-test"
    assert request.body["model"] == "rerank-v3.5"
    assert request.body["query"] == "sourdough bread"
    documents = request.body["documents"]
    assert len(documents) == 6  # the page is over-fetched twice for the reranker
    expected = sorted(range(len(documents)), key=lambda i: (-scores("", documents)[i], i))
    assert [r["index"] for r in event["rankings"]] == expected
    assert [documents[r["index"]] for r in event["rankings"][:3]] == [r["textual_representation"]
                                                                    for r in response.results]
    assert response.state.provider_used["reranking"] == COHERE


def test_rerank_failure_keeps_the_retrieval_order_and_says_so(collection, vendors):
    _, _, c = vendors
    c.fail(503)
    plain = run(collection, "sourdough bread", limit=3)

    response = run(collection, "sourdough bread", rerank=True, limit=3)

    assert files_of(response) == files_of(plain)
    assert one_event(response, "reranking_done")["applied"] is False
    assert "no reranker available" in response.state.skipped["reranking"]
    assert "HTTP 503" in response.state.skipped["reranking"]
    assert "reranking" not in response.state.provider_used
    assert_skips_are_reported(response)


def _age_days(collection, **days_by_file):
    """Make each file's chunks `days` old (their updated_at), as if the source said so."""
    from datetime import timedelta

    from django.utils import timezone

    from airweave.collections.models import Chunk

    for path, days in days_by_file.items():
        Chunk.objects.filter(collection=collection, original_entity_id=path).update(
            updated_at=timezone.now() - timedelta(days=days))


def test_recency_weight_reorders_the_reranked_results(collection, vendors):
    """A reranker that prefers old documents: with recency_weight 1 the freshest come first anyway."""
    _, _, c = vendors
    preference = ["Jupiter", "conveyor", "feline"]
    c.rerank_scores = lambda query, docs: [next((0.9 - 0.1 * i for i, w in enumerate(preference) if w in d), 0.01)
                                           for d in docs]
    _age_days(collection, **{path: 1000 for path in FILES})
    _age_days(collection, **{"space/jupiter.txt": 900, "warehouse/inventory.txt": 450, "pets/afternoon.txt": 1})

    reranked = run(collection, "sourdough bread", rerank=True, limit=3)
    fresh = run(collection, "sourdough bread", rerank=True, limit=3, recency_weight=1.0)
    blended = run(collection, "sourdough bread", rerank=True, limit=3, recency_weight=0.15)

    assert files_of(reranked) == ["space/jupiter.txt", "warehouse/inventory.txt", "pets/afternoon.txt"]
    assert files_of(fresh)[0] == "pets/afternoon.txt"  # reranked third, but a day old against years
    names = [e["name"] for e in events_of(fresh, "operator_end")]
    assert names.index("reranking") < names.index("recency")
    # 0.15 of freshness lifts the day-old third result (0.85·0.7/0.9 + 0.15·0.99 ≈ 0.81) over the 450-day-old
    # second (0.85·0.8/0.9 + 0.15·0.03 ≈ 0.76), not over the best (0.85).
    assert files_of(blended) == ["space/jupiter.txt", "pets/afternoon.txt", "warehouse/inventory.txt"]


def test_recency_handles_negative_reranker_scores(collection, vendors):
    _, _, c = vendors
    c.rerank_scores = lambda query, docs: [-1.0 if "Jupiter" in d else -8.0 for d in docs]  # cross-encoder logits
    _age_days(collection, **{path: 1000 for path in FILES})
    _age_days(collection, **{"space/jupiter.txt": 1})

    response = run(collection, "planet storm", rerank=True, limit=2, recency_weight=0.5)

    assert files_of(response)[0] == "space/jupiter.txt"  # best reranked and fresh: stays first
    assert all(0 <= r["score"] <= 1 for r in response.results)


# -- answer --------------------------------------------------------------------------------------

def test_answer_streams_as_deltas_that_add_up_to_the_completion(collection, vendors):
    a, _, _ = vendors
    deltas = ["Feed the starter", " with flour and water", " [[1]].", " Pancakes need", " a batter [[2]]."]
    a.stream_replies = [deltas]

    response = run(collection, "how do I make bread", generate_answer=True, limit=3)

    streamed = [e["text"] for e in events_of(response, "completion_delta")]
    assert streamed == deltas
    done = one_event(response, "completion_done")
    assert "".join(streamed) == done["text"] == response.completion
    assert response.state.provider_used["generate_answer"] == OPENAI
    types = [e["type"] for e in response.events]
    assert types.index("completion_done") > max(i for i, t in enumerate(types) if t == "completion_delta")
    [request] = a.requests_to(CHAT)
    assert request.body["stream"] is True
    prompt = request.body["messages"][1]["content"]
    for n, result in enumerate(response.results, start=1):  # the context is numbered like the results
        assert f"[[{n}]] {result['textual_representation']}" in prompt
    assert "[[4]]" not in prompt
    assert "Question: how do I make bread" in prompt


def test_out_of_range_citations_are_stripped(collection, vendors):
    a, _, _ = vendors
    a.stream_replies = [["Bake the loaf [[1]]", " in a hot oven [[7]]", " and rest it [[0]]", " [[3]]."]]

    response = run(collection, "how do I make bread", generate_answer=True, limit=3)

    assert len(response.results) == 3
    cited = [int(n) for n in re.findall(r"\[\[(\d+)\]\]", response.completion)]
    assert cited == [1, 3]
    assert one_event(response, "completion_done")["text"] == response.completion
    assert response.completion.startswith("Bake the loaf [[1]] in a hot oven")


def test_streamed_deltas_carry_no_out_of_range_citation(collection, vendors):
    a, _, _ = vendors
    a.stream_replies = [["Bake the loaf [[1]]", " in a hot oven [[7]]."]]

    response = run(collection, "how do I make bread", generate_answer=True, limit=3)

    assert "".join(e["text"] for e in events_of(response, "completion_delta")) == response.completion


# -- everything together, then the first provider down ------------------------------------------

def full(collection, query="how do I bake sourdough bread"):
    return run(collection, query, expand_query=True, interpret_filters=True, rerank=True, generate_answer=True,
               limit=3)


def script_full(server):
    server.json_replies["query_expansion"] = lambda body: {"alternatives": ["sourdough loaf baking"]}
    server.json_replies["query_interpretation"] = lambda body: interpretation(0.9)
    server.stream_replies = lambda body: ["Feed the starter ", "and bake the loaf [[1]]."]


def test_all_operations_record_the_provider_that_answered(collection, vendors):
    a, _, c = vendors
    script_full(a)

    response = full(collection)

    assert response.state.provider_used == {"query_expansion": OPENAI, "query_interpretation": OPENAI,
                                            "embed_query": LOCAL_EMBEDDER, "reranking": COHERE,
                                            "generate_answer": OPENAI}
    assert set(files_of(response)) <= {"kitchen/sourdough.md", "kitchen/pancakes.md"}
    assert response.completion == "Feed the starter and bake the loaf [[1]]."
    assert events_of(response, "error") == []
    names = [e["name"] for e in events_of(response, "operator_end")]
    assert names.index("query_expansion") < names.index("embed_query") < names.index("retrieval")
    assert names.index("retrieval") < names.index("reranking") < names.index("generate_answer")
    assert [e["type"] for e in response.events][-2:] == ["results", "done"]
    assert [r.body["response_format"]["json_schema"]["name"] for r in a.requests if not r.body.get("stream")] == [
        "query_expansion", "query_interpretation"]
    assert len(c.requests) == 1
    assert_skips_are_reported(response)


@pytest.mark.parametrize("outage", ["http500", "stopped"])
def test_when_the_first_provider_is_down_the_next_one_answers(collection, vendors, outage):
    a, b, _ = vendors
    script_full(a)
    script_full(b)
    b.stream_replies = lambda body: ["Groq says: ", "bake the loaf [[1]]."]
    if outage == "http500":
        a.fail(500, times=None)
    else:
        a.stop()

    response = full(collection)

    assert response.state.provider_used == {"query_expansion": GROQ, "query_interpretation": GROQ,
                                            "embed_query": LOCAL_EMBEDDER, "reranking": COHERE,
                                            "generate_answer": GROQ}
    assert response.completion == "Groq says: bake the loaf [[1]]."
    # The events say which provider answered each operation, as the REST response's `providers` does.
    assert {e["name"]: e["provider"] for e in events_of(response, "operator_end") if "provider" in e} == \
        response.state.provider_used
    assert "".join(e["text"] for e in events_of(response, "completion_delta")) == response.completion
    assert one_event(response, "expansion_done")["alternatives"] == ["sourdough loaf baking"]
    assert [r.bearer for r in b.requests] == ["gsk-groq-test"] * 3
    assert events_of(response, "error") == []
    if outage == "http500":
        # three failures in a row (expansion, interpretation, answer) opened A's circuit:
        # the next search does not even ask A.
        assert len(a.requests) == 3
        again = full(collection)
        assert again.state.provider_used["generate_answer"] == GROQ
        assert len(a.requests) == 3


def test_when_every_language_model_fails_the_answer_is_extractive(collection, vendors):
    a, b, _ = vendors
    a.fail(503, times=None)
    b.fail(429, times=None)

    response = run(collection, "how do I bake sourdough bread", generate_answer=True, limit=3)

    assert response.state.provider_used["generate_answer"] == "local/extractive"
    assert re.search(r"\[\[[123]\]\]", response.completion)
    assert [r.failure for r in a.requests] == [503] and [r.failure for r in b.requests] == [429]
    assert events_of(response, "error") == []


def test_a_rejected_key_fails_only_its_operation(collection, vendors):
    a, b, _ = vendors
    a.fail(401, path=CHAT)  # expansion is the first chat call
    a.stream_replies = [["Bread needs flour [[1]]."]]

    response = run(collection, "how do I bake sourdough bread", expand_query=True, generate_answer=True, limit=3)

    assert response.results
    assert response.state.skipped["query_expansion"].startswith("failed: HTTP 401")
    [error] = events_of(response, "error")
    assert error["operation"] == "query_expansion" and "401" in error["message"]
    assert b.requests == []  # a non-retryable failure does not move to the next provider
    assert response.state.provider_used["generate_answer"] == OPENAI
    assert response.completion == "Bread needs flour [[1]]."
    assert_skips_are_reported(response)


def test_answer_stream_that_breaks_midway_ends_partial_instead_of_garbling_the_stream(collection, vendors):
    a, b, _ = vendors
    a.partial_deltas = ["OpenAI started ", "to answer "]
    a.fail("stream_cut")
    b.stream_replies = [["Groq answers ", "[[1]]."]]

    response = run(collection, "how do I make bread", generate_answer=True, limit=3)

    # Deltas already reached the client: another provider must not append its own answer to them.
    assert response.state.provider_used["generate_answer"] == OPENAI
    assert response.completion == "OpenAI started to answer"
    assert "".join(e["text"] for e in events_of(response, "completion_delta")).strip() == response.completion
    [error] = events_of(response, "error")
    assert error["operation"] == "generate_answer" and "partial" in error["message"]
    assert b.requests == []


# -- no keys at all ------------------------------------------------------------------------------

def test_without_any_key_the_pipeline_still_answers_with_an_extractive_cited_answer(collection, vendor_server):
    watcher = vendor_server("nobody")  # configured for nothing: it must see no request

    response = full(collection, "how do I bake sourdough bread with a starter")

    assert response.results
    assert response.state.provider_used == {"embed_query": LOCAL_EMBEDDER, "generate_answer": "local/extractive"}
    completion = response.completion
    pairs = re.findall(r"(.+?)\s*\[\[(\d+)\]\]", completion)
    assert pairs, completion
    assert re.sub(r"\s*\[\[\d+\]\]", "", completion).strip() == " ".join(s.strip() for s, _ in pairs)
    for sentence, number in pairs:
        n = int(number)
        assert 1 <= n <= len(response.results), (n, len(response.results))
        text = " ".join(response.results[n - 1]["textual_representation"].split())
        assert sentence.strip() in text, (sentence, text)
    assert one_event(response, "completion_done")["text"] == completion
    assert "".join(e["text"] for e in events_of(response, "completion_delta")) == completion

    skipped = response.state.skipped
    for operation in ("query_expansion", "query_interpretation", "reranking"):
        assert operation in skipped, skipped
    assert "no language model available" in skipped["query_expansion"]
    assert "OPENAI_API_KEY" in skipped["query_expansion"]
    assert "no language model available" in skipped["query_interpretation"]
    assert "no reranker available" in skipped["reranking"] and "COHERE_API_KEY" in skipped["reranking"]
    assert "generate_answer" not in skipped
    assert_skips_are_reported(response)
    assert "OPENAI_API_KEY" in one_event(response, "interpretation_skipped")["reason"]
    assert one_event(response, "reranking_done")["applied"] is False
    assert events_of(response, "expansion_done") == []
    assert events_of(response, "error") == []
    assert watcher.requests == []


# -- results whose own text looks like a citation ----------------------------------------------

FOOTNOTED = {
    "leave.md": "# Leave\nTo request annual leave you file an absence request in HR Links first.[[2]] Your "
                "supervisor approves it before the leave starts.[[3]]\n\nAnnual leave requests need approval "
                "from the supervisor before the leave starts [[7]] as the rules say.",
    "travel.md": "# Travel\nBook every trip through the travel agency and keep the receipts for the voucher.",
    "laptop.md": "# Laptops\nIT ships a laptop on your first day; report a lost laptop to the help desk at once.",
}


def cited_pairs(completion: str) -> list[tuple[str, int]]:
    return [(" ".join(s.split()), int(n)) for s, n in re.findall(r"(.+?)\s*\[\[(\d+)\]\]", completion)]


def test_extractive_answer_never_quotes_a_documents_own_citation_marks(make_collection, sync_folder, write_files,
                                                                       vendor_server):
    collection = make_collection(readable_id="footnoted")
    sync_folder(collection, write_files(FOOTNOTED))

    response = run(collection, "who approves annual leave requests before the leave starts", generate_answer=True,
                   limit=3)

    pairs = cited_pairs(response.completion)
    assert pairs, response.completion
    for sentence, number in pairs:  # every mark points at the result that holds the quoted words
        assert sentence in " ".join(response.results[number - 1]["textual_representation"].split()), (sentence, number)
    assert len(re.findall(r"\[\[\d+\]\]", response.completion)) == len(pairs)


def test_a_language_model_sees_a_documents_own_marks_as_single_brackets(make_collection, sync_folder, write_files,
                                                                         vendors):
    a, _, _ = vendors
    collection = make_collection(readable_id="footnoted")
    sync_folder(collection, write_files(FOOTNOTED))

    run(collection, "who approves annual leave", generate_answer=True, limit=3)

    [request] = [r for r in a.requests if r.body.get("stream")]
    prompt = request.body["messages"][1]["content"]
    assert "first.[2] Your supervisor" in prompt and "[[2]] Your" not in prompt
    assert re.findall(r"\[\[(\d+)\]\]", prompt) == ["1", "2", "3"]  # only the result numbers


def test_answer_context_is_cut_verbatim_when_results_exceed_the_budget(collection, vendors):
    from search.operations.generate_answer import GenerateAnswer

    operation = GenerateAnswer(context_tokens=6)
    state = run(collection, "bread", limit=1).state

    cut = operation._budgeted(["Jupiter Is The Largest Planet of the Solar System.", "Never reached."], state)

    assert cut == ["Jupiter Is The Largest Planet of"]  # six tokens in the original's case and spacing, not decoded tokens
