"""POST /collections/{readable_id}/documents: the push API, through the sync pipeline's rules."""
from __future__ import annotations

from django.test import override_settings

from airweave.collections.models import Entity, SourceConnection, SyncJob
from airweave.providers.local_embeddings import get_local_embedder
from tests.connectors.lifecycle import entity_text, search_ids, search_results

DOCS = [
    {"id": "kb-1", "name": "Ferry timetable", "text": "The ferry to the islands leaves the harbour at seven.",
     "breadcrumbs": [{"entity_id": "kb", "name": "Knowledge base", "entity_type": "Space"}],
     "created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-02T09:00:00Z",
     "web_url": "https://kb.example.org/1", "metadata": {"team": "ops", "tags": ["transport"]}},
    {"id": "kb-2", "name": "Lighthouse", "text": "The lighthouse lamp is cleaned every second Tuesday."},
    {"id": "kb-3", "text": "The fish market opens at dawn on the quay."},
]


def push(client, body, readable_id="docs"):
    return client.post(f"/collections/{readable_id}/documents", body, format="json")


def test_push_lifecycle(client, make_collection):
    collection = make_collection()
    r = push(client, {"documents": DOCS})
    assert r.status_code == 200, r.content
    job = r.json()
    assert job["status"] == "completed"
    assert (job["entities_inserted"], job["entities_updated"], job["entities_kept"]) == (3, 0, 0)
    connection = SourceConnection.objects.get(collection=collection, short_name="push")
    assert job["source_connection_id"] == str(connection.id)

    results = search_results(client, collection, "when does the ferry leave")
    top = results[0]
    assert top["airweave_system_metadata"]["original_entity_id"] == "kb-1"
    assert top["airweave_system_metadata"]["source_name"] == "push"
    assert top["airweave_system_metadata"]["entity_type"] == "PushDocumentEntity"
    assert top["name"] == "Ferry timetable" and top["web_url"] == "https://kb.example.org/1"
    assert top["raw_source_fields"] == {"team": "ops", "tags": ["transport"]}
    assert top["breadcrumbs"] == [{"entity_id": "kb", "name": "Knowledge base", "entity_type": "Space"}]
    assert top["updated_at"].startswith("2026-03-02T09:00:00")
    assert Entity.objects.get(entity_id="kb-3").name == "kb-3"  # no name: the id

    # the same batch again: every document kept, nothing embedded
    calls = get_local_embedder().calls
    again = push(client, {"documents": DOCS}).json()
    assert (again["entities_inserted"], again["entities_updated"], again["entities_kept"]) == (0, 0, 3)
    assert get_local_embedder().calls == calls

    # an edit and a deletion in one request
    edited = {**DOCS[1], "text": "The lighthouse lamp now runs on solar panels."}
    r = push(client, {"documents": [edited], "delete_ids": ["kb-3", "never-pushed"]})
    body = r.json()
    assert (body["entities_inserted"], body["entities_updated"], body["entities_deleted"]) == (0, 1, 1)
    assert "solar panels" in entity_text(connection, "kb-2")
    assert search_ids(client, collection, "solar panels lighthouse")[0] == "kb-2"
    assert "kb-3" not in search_ids(client, collection, "fish market at dawn")
    assert not Entity.objects.filter(entity_id="kb-3").exists()

    # one connection for all pushes; each push is a job of it
    assert SourceConnection.objects.filter(collection=collection, short_name="push").count() == 1
    jobs = client.get(f"/source-connections/{connection.id}/jobs").json()
    assert len(jobs) == 3 and all(j["status"] == "completed" for j in jobs)

    # running the push connection lists nothing and deletes nothing
    run = client.post(f"/source-connections/{connection.id}/run")
    assert run.status_code == 200
    finished = SyncJob.objects.get(pk=run.json()["id"])
    assert finished.status == "completed" and finished.entities_deleted == 0
    assert Entity.objects.filter(source_connection=connection).count() == 2


def test_empty_text_is_skipped_with_a_reason(client, make_collection):
    make_collection()
    body = push(client, {"documents": [{"id": "blank", "text": "   \n "}, DOCS[0]]}).json()
    assert (body["entities_inserted"], body["entities_skipped"]) == (1, 1)
    assert body["error_details"]["skipped"]["empty"]["examples"][0]["entity_id"] == "blank"


def test_access_is_stored(client, make_collection):
    make_collection()
    push(client, {"documents": [{**DOCS[0], "access": {"viewers": ["user:ana@example.org"], "is_public": False}}]})
    entity = Entity.objects.get(entity_id="kb-1")
    assert entity.access_viewers == ["user:ana@example.org"] and entity.access_is_public is False


def _errors(r):
    assert r.status_code == 422, r.content
    return r.json()["detail"]


def test_an_unknown_document_field_is_ignored_and_named(client, make_collection):
    """Issue 12: unknown fields are ignored, as Airweave does, and the Warning header names them."""
    make_collection()
    r = push(client, {"documents": [{"id": "a", "text": "x", "colour": "red"}]})
    assert r.status_code == 200 and r["Warning"] == '299 - "Unknown fields ignored: documents.colour"'


def test_validation_errors_are_422_with_locations(client, make_collection):
    make_collection()
    detail = _errors(push(client, {"documents": [{"id": "a"}]}))
    assert detail[0]["loc"] == ["body", "documents", 0, "text"]
    detail = _errors(push(client, {"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}))
    assert "appears twice" in detail[0]["msg"]
    detail = _errors(push(client, {"documents": [{"id": "a", "text": "x"}], "delete_ids": ["a"]}))
    assert "both upserted and deleted" in detail[0]["msg"]
    assert "at least one" in _errors(push(client, {}))[0]["msg"]
    detail = _errors(push(client, {"documents": [{"id": "a", "text": "x", "created_at": "yesterday"}]}))
    assert detail[0]["loc"] == ["body", "documents", 0, "created_at"]
    detail = _errors(push(client, {"documents": [{"id": "a", "text": "x", "breadcrumbs": [{"name": "n"}]}]}))
    assert detail[0]["loc"][:4] == ["body", "documents", 0, "breadcrumbs"]
    detail = _errors(push(client, {"documents": [{"id": "a\x00b", "text": "x"}]}))
    assert detail[0]["loc"] == ["body", "documents", 0, "id"]
    detail = _errors(push(client, {"documents": [{"id": "a", "text": "x", "metadata": {"big": "x" * 70000}}]}))
    assert "64 KB" in detail[0]["msg"]
    with override_settings(AIRWEAVE_PUSH_MAX_DOCUMENTS=2):
        detail = _errors(push(client, {"documents": DOCS}))
        assert "at most 2 documents" in detail[0]["msg"]
    assert not SyncJob.objects.exists()  # nothing was written by a refused request


def test_other_organizations_collection_is_404(client, other_client, make_collection, other_org):
    make_collection(readable_id="theirs", organization=other_org)
    r = push(client, {"documents": DOCS[:1]}, readable_id="theirs")
    assert r.status_code == 404
    assert push(other_client, {"documents": DOCS[:1]}, readable_id="theirs").status_code == 200
