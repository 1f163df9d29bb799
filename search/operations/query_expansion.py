"""QueryExpansion: a language model writes N distinct alternative phrasings of the query."""
from __future__ import annotations

from airweave.providers.errors import NoProviderAvailable
from search.operations.base import Context, OperationSkipped, SearchOperation
from search.state import SearchState

SYSTEM = ("You rewrite search queries for a retrieval system. Give alternative phrasings that keep the "
          "meaning but use different words (synonyms, expanded abbreviations, related terms). "
          "Do not answer the query.")


class QueryExpansion(SearchOperation):
    name = "query_expansion"
    optional = True

    def execute(self, state: SearchState, ctx: Context) -> None:
        if state.retrieval_strategy == "keyword":
            raise OperationSkipped("query expansion is off for the keyword strategy")
        n = int(self.options.get("alternatives", 4))
        schema = {"type": "object", "additionalProperties": False, "required": ["alternatives"],
                  "properties": {"alternatives": {"type": "array", "items": {"type": "string"}}}}
        try:
            reply, provider = ctx.chains["query_expansion"].call(lambda model, spec: model.complete_json(
                system=SYSTEM, user=f"Query: {state.query}\nWrite {n} alternatives.", schema=schema,
                name="query_expansion"))
        except NoProviderAvailable as exc:
            raise OperationSkipped(f"no language model available: {exc}") from None
        seen = {state.query.strip().lower()}
        alternatives = []
        for text in reply.get("alternatives", []):
            text = " ".join(str(text).split())
            if text and text.lower() not in seen and len(text) <= 1000:
                seen.add(text.lower())
                alternatives.append(text)
        state.alternatives = alternatives[:n]
        state.provider_used[self.name] = provider
        ctx.emit("expansion_done", op=self.name, alternatives=state.alternatives)
