"""Faults the API fuzzer (tests/drills/test_api_fuzz.py) found, each pinned by the request that found it."""
from __future__ import annotations

import json


def test_unknown_fields_with_control_or_non_latin_characters_are_named_safely(client):
    """An unknown field named with a carriage return or a character outside Latin-1 answered 500
    (Django refuses such a header value); the Warning header now escapes them."""
    body = {"name": "Keys", "r\u00db\u00efI\u0015\U00043f79": [], "\u00d9\r\u0091": 1, "zone\n": 2}
    response = client.post("/api-keys", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    warning = response["Warning"]
    assert warning.isascii() and "\r" not in warning and "\n" not in warning
    assert "\\u00d9\\r\\u0091" in warning and "zone\\n" in warning


def test_a_flood_of_unknown_fields_names_the_first_twenty(client):
    body = {"name": "Keys", **{f"field{i}": i for i in range(50)}}
    response = client.post("/api-keys", body, format="json")
    assert response.status_code == 201 and response["Warning"].endswith('and 30 more"')


def test_the_schema_documents_the_errors_each_operation_answers(client):
    schema = client.get("/openapi.json").json()
    create = schema["paths"]["/source-connections"]["post"]["responses"]
    assert {"401", "404", "422", "429", "503"} <= set(create)  # 404: an unknown readable_collection_id
    callback = schema["paths"]["/source-connections/callback"]["get"]["responses"]
    assert {"200", "302", "400", "410"} <= set(callback)
    assert callback["400"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorResponse"}


def test_an_error_of_a_stream_endpoint_is_json_even_when_an_event_stream_was_asked_for(transactional_db, client):
    """`?format=sse` (or Accept: text/event-stream) on a missing job answered JSON labelled text/event-stream."""
    response = client.get("/sync/job/66026bf3-66c3-476f-9b3b-45b92ef5a117/subscribe?format=sse")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Sync job not found"}
    response = client.post("/collections/nope/search/stream", {"query": "x"}, format="json",
                           HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
