"""The fireflies source against a fake Fireflies GraphQL endpoint that checks what Fireflies checks:
the Bearer key, and every query validated against the part of its schema the source reads
(fixtures/fireflies/schema.graphql) and answered with only the fields it selects. Transcripts over
two `skip` pages with their sentences, summary and action items, a `too_many_requests` answer and an
HTTP 429 waited out, a refused key marking the connection `needs_reauth`, a sync found by search,
then an incremental run that asks `fromDate` the mark."""
from __future__ import annotations

from pathlib import Path

import pytest
import responses
from graphql import build_schema

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import fireflies
from connectors.sources.fireflies import FirefliesSource, FirefliesTranscriptEntity
from tests.connectors.graphql_fake import GraphQLFake
from tests.connectors.saas_cases import connect, run_sync, search_ids

SCHEMA = build_schema((Path(__file__).parent / "fixtures" / "fireflies" / "schema.graphql").read_text())
URL = "https://api.fireflies.ai/graphql"
KEY = "ff-3c2b1a09-8f7e-4d6c-b5a4-9382716f5e4d"
AUTH = {"Authorization": f"Bearer {KEY}"}


def transcript(tid, title, date_ms, sentences, overview, actions=""):
    return {"id": tid, "title": title, "date": date_ms, "dateString": "", "duration": 32.5,
            "organizer_email": "ana@harbour.example", "host_email": "ana@harbour.example",
            "participants": ["ana@harbour.example", "tom@harbour.example"],
            "transcript_url": f"https://app.fireflies.ai/view/{tid}", "audio_url": None, "meeting_link": None,
            "speakers": [{"id": "0", "name": "Ana Lima"}],
            "sentences": [{"index": i, "speaker_name": who, "speaker_id": 0, "text": text, "raw_text": text,
                           "start_time": i * 4.0, "end_time": i * 4.0 + 3.5} for i, (who, text) in enumerate(sentences)],
            "summary": {"overview": overview, "action_items": actions, "keywords": ["ferries"], "outline": None,
                        "short_summary": None, "bullet_gist": None}}


STANDUP = transcript("01HXA1", "Ops stand-up", 1714640400000, [("Ana Lima", "Pier 2 gates reject QR codes in rain."),
                                                                ("Tom Reyes", "I will swap the scanner today.")],
                     "The team discussed the pier 2 gates.", "Tom: swap the pier 2 scanner")
REVIEW = transcript("01HXB2", "Storm review", 1714726800000, [("Ana Lima", "Above 50 knots we suspend sailings.")],
                    "Storm policy confirmed.")
ONE_ON_ONE = transcript("01HXC3", "Crew rota planning", 1714554000000,
                        [("Ana Lima", "The rota goes out every Friday.")], "Rota timing.")


def answers(pages=((STANDUP, REVIEW), (ONE_ON_ONE,))):
    return {("Transcripts", 2 * n): {"data": {"transcripts": list(page)}} for n, page in enumerate(pages)}


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(fireflies, "PAGE", 2)


def make():
    return FirefliesSource(FirefliesSource.validate_config({}), {"api_key": KEY})


def test_transcripts_over_two_pages_with_sentences_and_summary(rsps):
    api = GraphQLFake(rsps, URL, SCHEMA, answers(), headers=AUTH, page_variable="skip")
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["transcript:01HXA1", "transcript:01HXB2", "transcript:01HXC3"]
    standup = entities["transcript:01HXA1"]
    assert isinstance(standup, FirefliesTranscriptEntity) and standup.sentences[1] == \
        "Tom Reyes: I will swap the scanner today."
    assert standup.action_items == "Tom: swap the pier 2 scanner" and standup.web_url.endswith("/view/01HXA1")
    assert standup.created_at.isoformat() == "2024-05-02T09:00:00+00:00"
    assert [b.name for b in standup.breadcrumbs] == ["ana@harbour.example"]
    assert [v["fromDate"] for _, v in api.seen] == [None, None]
    assert source.is_full_listing() and source.next_cursor()["since"] == {"transcripts": "2024-05-03T09:00:00Z"}


def test_too_many_requests_and_an_http_429_are_waited_out(rsps):
    pages = answers(pages=((REVIEW,),))
    pages[("Transcripts", 0)] = [
        (429, {"Retry-After": "1"}, {"errors": [{"message": "Too many requests"}]}),
        (200, {}, {"data": None, "errors": [{"message": "Too many requests. Please retry after 1 minute",
                                             "extensions": {"code": "too_many_requests", "status": 429}}]}),
        (200, {}, {"data": {"transcripts": [REVIEW]}})]
    GraphQLFake(rsps, URL, SCHEMA, pages, headers=AUTH, page_variable="skip")
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and len(waits) == 2


def test_a_refused_key_marks_the_connection_needs_reauth(rsps, make_collection):
    GraphQLFake(rsps, URL, SCHEMA, {("Transcripts", 0): [(200, {}, {"data": None, "errors": [{
        "message": "Invalid API key", "extensions": {"code": "auth_failed", "status": 401}}]})]}, page_variable="skip")
    connection = connect(make_collection(), "fireflies", {"api_key": "ff-revoked-0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_asks_from_the_mark(rsps, make_collection, client):
    api = GraphQLFake(rsps, URL, SCHEMA, answers(), headers=AUTH, page_variable="skip")
    connection = connect(make_collection(), "fireflies", {"api_key": KEY})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "who will replace the scanner at the pier", limit=1) == ["transcript:01HXA1"]

    newer = transcript("01HXD4", "Gate follow-up", 1714813200000, [("Tom Reyes", "The new scanner reads wet QR codes.")],
                       "Scanner swapped.")
    api.answers = answers(pages=((REVIEW, newer), ()))
    api.seen.clear()
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_deleted) == ("completed", 1, 0), job.error
    assert [v["fromDate"] for _, v in api.seen] == ["2024-05-03T09:00:00Z", "2024-05-03T09:00:00Z"]
    assert Entity.objects.filter(source_connection=connection).count() == 4
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"transcripts": "2024-05-04T09:00:00Z"}
