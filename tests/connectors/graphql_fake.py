"""A vendor's GraphQL endpoint as its schema defines it, for source tests (Linear, Shopify, Fireflies).

`GraphQLFake(rsps, url, schema, answers, headers=...)` takes every POST to `url` through
`responses`. Every POST must carry the `headers` given and a JSON body of exactly `query` and
`variables`; the query must parse, validate against `schema` (a graphql-core schema built from the
part of the vendor's SDL the source reads: every field and argument exists, with its type) and
name one operation, and the variables must coerce to the operation's declared types. Anything
else fails the test (AssertionError, recorded in `refused`). A valid query is answered from
`answers[(operation, variables.get(page_variable))]` (`page_variable`: "after" by default)
executed against the schema, so the answer holds
only the fields the query selected; an answer that is a list of `(status, headers, body)` is
played in order (the last one repeats). `seen` records each operation and its variables.
"""
from __future__ import annotations

import json

from graphql import GraphQLError, OperationDefinitionNode, graphql_sync, parse, validate
from graphql.execution.values import get_variable_values


class GraphQLFake:
    """See the module docstring."""

    def __init__(self, rsps, url: str, schema, answers: dict, *, headers: dict | None = None,
                 page_variable: str = "after"):
        self.schema = schema
        self.page_variable = page_variable
        self.answers = answers
        self.headers = dict(headers or {})
        self.seen = []
        self.refused = []
        rsps.add_callback("POST", url, callback=self)

    def refuse(self, message):
        self.refused.append(message)
        raise AssertionError(message)

    def __call__(self, request):
        for key, expected in self.headers.items():
            if request.headers.get(key) != expected:
                self.refuse(f"header {key}: {request.headers.get(key)!r}, expected {expected!r}")
        payload = json.loads(request.body)
        if set(payload) != {"query", "variables"}:
            self.refuse(f"the body must hold query and variables, not {sorted(payload)}")
        try:
            document = parse(payload["query"])
        except GraphQLError as exc:
            self.refuse(f"the query does not parse: {exc}")
        errors = validate(self.schema, document)
        if errors:
            self.refuse(f"the query does not validate against the vendor's schema: {[e.message for e in errors]}")
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        if len(operations) != 1 or operations[0].name is None:
            self.refuse("send one named operation per request")
        coerced = get_variable_values(self.schema, operations[0].variable_definitions or [], payload["variables"])
        if isinstance(coerced, list):
            self.refuse(f"the variables do not fit the operation: {[e.message for e in coerced]}")
        operation, variables = operations[0].name.value, payload["variables"]
        self.seen.append((operation, variables))
        answer = self.answers[(operation, variables.get(self.page_variable))]
        if isinstance(answer, list):
            status, headers, body = answer.pop(0) if len(answer) > 1 else answer[0]
            return status, headers, json.dumps(body)
        result = graphql_sync(self.schema, payload["query"], root_value=answer["data"], variable_values=variables)
        if result.errors:
            raise AssertionError(f"the fixture does not answer {operation}: {[e.message for e in result.errors]}")
        return 200, {}, json.dumps({"data": result.data, **({"extensions": answer["extensions"]}
                                                            if "extensions" in answer else {})})
