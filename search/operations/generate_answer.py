"""GenerateAnswer: a cited answer over the page of results, streamed as completion_delta events.

A language model answers from a token-budgeted context of numbered results and cites them
inline as [[N]]; without one, the extractive answer (airweave.providers.local_answer) quotes
the results' own sentences. Citations that do not point at a returned result are removed.
"""
from __future__ import annotations

import re

from airweave.providers.embeddings import get_embedder
from airweave.providers.errors import NoProviderAvailable, ProviderError
from airweave.providers.local_answer import CITATION_LIKE, extractive_answer
from search.operations.base import Context, SearchOperation
from search.results import candidate_text
from search.state import SearchState

NO_RESULTS = "No results found for your query."
NOTHING_TO_QUOTE = "No sentence of the results could be quoted as an answer; see the results themselves."
CITATION = re.compile(r"\[\[(\d+)\]\]")
SYSTEM = ("Answer the question using only the numbered search results. Cite every claim inline with the "
          "number of the result it comes from, written as [[N]]. If the results do not contain the answer, "
          "say so briefly. Be concise.")


class GenerateAnswer(SearchOperation):
    name = "generate_answer"
    REQUIRES = ("retrieval",)
    AFTER = ("reranking", "federated_search", "recency")
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        page = state.candidates[state.offset:state.offset + state.limit]
        if not page:
            state.completion = NO_RESULTS
            ctx.emit("completion_done", op=self.name, text=NO_RESULTS)
            return
        passages = self._budgeted([candidate_text(c) for c in page], state)
        try:
            text, provider = ctx.chains["generate_answer"].call(
                lambda model, spec: self._answer(model, state, passages, len(page), ctx))
        except NoProviderAvailable as exc:
            ctx.emit("error", operation=self.name, message=str(exc))
            return
        state.completion = _valid_citations(text, len(page)).strip()
        state.provider_used[self.name] = provider
        ctx.emit("completion_done", op=self.name, text=state.completion)

    def _answer(self, model, state: SearchState, passages: list[str], count: int, ctx: Context) -> str:
        """Stream one provider's answer. Once a delta has been sent, a broken stream ends the answer
        (partial, with an `error` event) instead of letting another provider append to it."""
        if model == "extractive":
            text = extractive_answer(state.query, passages) or NOTHING_TO_QUOTE
            ctx.emit("completion_delta", op=self.name, text=text)
            return text
        # A "[[3]]" inside a result's own text would pass for a citation mark: written "[3]" instead.
        context = "\n\n".join(f"[[{i}]] {CITATION_LIKE.sub(_single, p)}" for i, p in enumerate(passages, start=1))
        citations = CitationFilter(count)
        parts: list[str] = []

        def send(text: str) -> None:
            if text:
                parts.append(text)
                ctx.emit("completion_delta", op=self.name, text=text)

        try:
            for delta in model.stream_text(system=SYSTEM, user=f"Search results:\n{context}\n\nQuestion: {state.query}"):
                send(citations.feed(delta))
        except ProviderError as exc:
            if not parts:
                raise
            ctx.emit("error", operation=self.name, message=f"the answer stream broke off; the answer is partial ({exc})")
        send(citations.flush())
        return "".join(parts)

    def _budgeted(self, texts: list[str], state: SearchState) -> list[str]:
        """The results' texts, cut so that together they fit `context_tokens` (the embedding model's tokens).

        A text is cut at the character where its last fitting token ends, so what is kept is
        verbatim (decoding the tokens would lowercase an uncased model's text, and an extractive
        answer would then quote words that are in no result).
        """
        budget = int(self.options.get("context_tokens", 3000))
        tokenizer = get_embedder(state.embedding_model).tokenizer
        out = []
        for text in texts:
            if budget <= 0:
                break
            encoded = tokenizer(text, add_special_tokens=False, verbose=False, return_offsets_mapping=True)
            ids = encoded["input_ids"]
            if len(ids) > budget:
                text = text[:encoded["offset_mapping"][budget - 1][1]]
            budget -= min(len(ids), budget)
            out.append(text)
        return out


def _single(mark: re.Match) -> str:
    """ "[[3]]" (with its surrounding space) → " [3] "."""
    return mark.group(0).replace("[[", "[").replace("]]", "]")


def _valid_citations(text: str, count: int) -> str:
    """Drop [[N]] marks whose N is not a position in the returned results (1..count)."""
    return CITATION.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= count else "", text)


_OPEN_MARK = re.compile(r"\[(\[\d*\]?)?$")


class CitationFilter:
    """Filters streamed text so that only valid [[N]] marks reach the client.

    A mark split across deltas ("[[", "1", "2]]") is held back until it is complete.
    """

    def __init__(self, count: int):
        self.count = count
        self.pending = ""

    def feed(self, delta: str) -> str:
        text = self.pending + delta
        held = _OPEN_MARK.search(text)
        cut = held.start() if held else len(text)
        self.pending = text[cut:]
        return _valid_citations(text[:cut], self.count)

    def flush(self) -> str:
        text, self.pending = self.pending, ""
        return _valid_citations(text, self.count)
