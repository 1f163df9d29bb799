"""The Gmail source against Gmail v1 responses shaped as Google documents them
(tests/connectors/fixtures/gmail: messages.list pages, format=raw messages with MIME trees and
attachments, history records), served by `responses` at the transport level."""
from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
import responses

from airweave.collections.models import Entity
from airweave.crypto import decrypt_json
from connectors.services import source_connection_create
from connectors.sources.gmail import GmailSource
from connectors.sources.mail import EmailAttachmentEntity, EmailEntity
from connectors.sync.services import sync_job_run, sync_job_start

FIXTURES = Path(__file__).parent / "fixtures" / "gmail"
API = "https://gmail.googleapis.com/gmail/v1/users/me"
OFFSITE, MAINTENANCE, INVOICE, REMINDER = "18d3f0a2b4c5d6e7", "18d40112233aabbc", "18d4022aa9f8e7d6", "18d5aa0011223344"
DRAFT = "18d7bb0d4a2c9e15"  # Dana's unsent draft to Alice
DANA = "dana@example.com"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def serve_gmail(rsps, *, draft=False, owner=DANA):
    """Register Dana's mailbox (any number of calls). `draft` lists her unsent draft too; `owner` gives the
    mailbox another address, in its profile and in its messages' headers."""
    def mailbox(name: str) -> dict:
        body = fixture(name)
        if "raw" in body:
            raw = base64.urlsafe_b64decode(body["raw"] + "=" * (-len(body["raw"]) % 4))
            body["raw"] = base64.urlsafe_b64encode(raw.replace(DANA.encode(), owner.encode())).decode().rstrip("=")
        return body

    rsps.add("GET", f"{API}/profile", json={**fixture("profile.json"), "emailAddress": owner})
    rsps.add("GET", f"{API}/labels", json=fixture("labels.json"))
    page2 = fixture("messages_page2.json")
    if draft:
        page2["messages"].append({"id": DRAFT, "threadId": DRAFT})
    rsps.add("GET", f"{API}/messages", json=page2,
             match=[responses.matchers.query_param_matcher({"pageToken": "09462954782160185376"}, strict_match=False)])
    rsps.add("GET", f"{API}/messages", json=fixture("messages_page1.json"),
             match=[responses.matchers.query_param_matcher({"maxResults": "100", "includeSpamTrash": "false"})])
    for message_id, name in ((OFFSITE, "offsite"), (MAINTENANCE, "maintenance"), (INVOICE, "invoice"),
                             (REMINDER, "reminder"), (DRAFT, "draft")):
        rsps.add("GET", f"{API}/messages/{message_id}", json=mailbox(f"message_{name}.json"),
                 match=[responses.matchers.query_param_matcher({"format": "raw"})])


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py: carol's mailbox (Dana's, under her address), with a
    message from alice and an unsent draft to her; bob is on no message."""
    from tests.access.test_source_matrix import AclWorld

    serve_gmail(rsps, draft=True, owner="carol@example.com")
    everything = {OFFSITE, f"{OFFSITE}#attachment-1", MAINTENANCE, INVOICE, DRAFT}
    return AclWorld(short_name="gmail", credentials={"access_token": "ya29.gmail"}, config={},
                    visible={"alice": {OFFSITE, f"{OFFSITE}#attachment-1"}, "bob": set(), "carol": everything},
                    everything=everything)


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def make(**config) -> GmailSource:
    return GmailSource(GmailSource.validate_config(config), {"access_token": "ya29.gmail"})


def test_messages_over_two_pages_with_mime_bodies_attachments_and_access(rsps):
    serve_gmail(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    # venue.png has no converter: named in the message's text, not an entity (as in every mail source).
    assert set(entities) == {OFFSITE, MAINTENANCE, INVOICE, f"{OFFSITE}#attachment-1"}
    offsite = entities[OFFSITE]
    assert isinstance(offsite, EmailEntity)
    assert offsite.name == "Planning offsite – March 12"  # RFC 2047 decoded
    fields = offsite.raw_source_fields
    assert fields["from"] == "Alice Martin <alice@example.com>" and fields["cc"] == ["bruno@example.com"]
    assert fields["to"] == ["Dana Kim <dana@example.com>", "eng-team@example.com"]
    assert fields["labels"] == ["IMPORTANT", "Projects/Offsite", "CATEGORY_PERSONAL", "INBOX"]  # no UNREAD
    assert fields["thread_id"] == OFFSITE and fields["message_id"] == "<CAB1x2y3zOffsite@mail.gmail.com>"
    text = offsite.textual_representation()
    assert "confirmed for March 12 in the Lisbon office" in text and "<p>" not in text
    assert "Attachments: agenda.csv, venue.png" in text
    assert [b.as_dict() for b in offsite.breadcrumbs] == [  # the first message of its thread
        {"entity_id": "gmail:dana@example.com", "name": "dana@example.com", "entity_type": "EmailMailbox"}]
    assert offsite.created_at.isoformat() == "2024-02-01T09:00:00+00:00"
    assert offsite.web_url == f"https://mail.google.com/mail/u/0/#all/{OFFSITE}"
    assert offsite.access_viewers == ["user:alice@example.com", "user:bruno@example.com", "user:dana@example.com",
                                      "user:eng-team@example.com"]

    agenda = entities[f"{OFFSITE}#attachment-1"]
    assert isinstance(agenda, EmailAttachmentEntity) and agenda.name == "agenda.csv"
    assert b"Hiring plan for the platform team" in agenda.read_bytes()
    assert [b.entity_type for b in agenda.breadcrumbs] == ["EmailMailbox", "EmailEntity"]
    assert agenda.access_viewers == offsite.access_viewers

    maintenance = entities[MAINTENANCE]  # an HTML-only, quoted-printable reply in ISO-8859-1
    assert maintenance.raw_source_fields["from"] == "Équipe Infra <infra@example.com>"
    text = maintenance.textual_representation()
    assert "maintenance jeudi de 14h à 16h" in text and "déploiement" in text
    assert maintenance.breadcrumbs[1].as_dict() == {"entity_id": "18d3ffeeddccbbaa",
                                                    "name": "Maintenance du serveur de build",
                                                    "entity_type": "EmailEntity"}
    assert entities[INVOICE].raw_source_fields["labels"] == ["CATEGORY_UPDATES", "INBOX", "Finance"]

    assert source.is_full_listing() and source.next_cursor() == {"history_id": "987100", "query": ""}


def test_a_draft_is_visible_to_the_mailbox_owner_only(rsps):
    """Its To and Cc have not received it; Gmail lists drafts among the messages, with the DRAFT label."""
    serve_gmail(rsps, draft=True)
    entities = {e.entity_id: e for e in make().generate_entities({})}
    draft = entities[DRAFT]
    assert draft.raw_source_fields["to"] == ["Alice Martin <alice@example.com>"]
    assert draft.raw_source_fields["labels"] == ["DRAFT"]
    assert (draft.access_viewers, draft.access_is_public) == ([f"user:{DANA}"], False)
    assert entities[OFFSITE].access_viewers == ["user:alice@example.com", "user:bruno@example.com",
                                                f"user:{DANA}", "user:eng-team@example.com"]


def test_429_with_retry_after_is_retried(rsps):
    rsps.add("GET", f"{API}/profile", status=429, headers={"Retry-After": "0"}, json={"error": {
        "code": 429, "message": "Too many concurrent requests for user", "status": "RESOURCE_EXHAUSTED",
        "errors": [{"message": "Too many concurrent requests for user", "domain": "global",
                    "reason": "rateLimitExceeded"}]}})
    serve_gmail(rsps)
    assert len([e for e in make(include_attachments=False).generate_entities({})]) == 3
    assert len([c for c in rsps.calls if c.request.url == f"{API}/profile"]) == 2


def test_a_query_is_sent_and_makes_every_run_a_full_listing(rsps):
    serve_gmail(rsps)
    rsps.add("GET", f"{API}/messages", json={"resultSizeEstimate": 0},
             match=[responses.matchers.query_param_matcher({"q": "label:finance newer_than:1y"}, strict_match=False)])
    source = make(query="label:finance newer_than:1y")
    assert list(source.generate_entities({"history_id": "1", "query": "label:finance newer_than:1y"})) == []
    assert source.is_full_listing() and not any("/history" in c.request.url for c in rsps.calls)


def test_sync_search_then_history_adds_deletes_and_trashes(rsps, make_collection, client):
    serve_gmail(rsps)
    token = rsps.add("POST", "https://oauth2.googleapis.com/token",
                     json={"access_token": "ya29.fresh", "expires_in": 3599, "token_type": "Bearer"})
    connection = source_connection_create(
        collection=make_collection(), short_name="gmail", sync_immediately=False, for_api=False,
        credentials={"access_token": "ya29.old", "refresh_token": "1//rt", "expires_at": time.time() - 5,
                     "client_id": "42.apps.googleusercontent.com", "client_secret": "GOCSPX-s"})
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error_details
    assert len(token.calls) == 1  # the expired token was refreshed before the first call
    connection.refresh_from_db()
    assert decrypt_json(connection.encrypted_credentials)["access_token"] == "ya29.fresh"
    assert {c.request.headers["Authorization"] for c in rsps.calls if c.request.url.startswith(API)} == {
        "Bearer ya29.fresh"}

    r = client.post("/collections/docs/search/instant", {"query": "invoice INV-2024-0042 due date", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == INVOICE
    r = client.post("/collections/docs/search/instant", {"query": "hiring plan platform team agenda", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == f"{OFFSITE}#attachment-1"

    # Next run: history from 987100 → a reply added, the invoice deleted, the maintenance mail trashed.
    rsps.reset()
    serve_gmail(rsps)
    rsps.replace("GET", f"{API}/messages/{MAINTENANCE}",
                 json={**fixture("message_maintenance.json"), "labelIds": ["TRASH", "CATEGORY_UPDATES"]})
    history = fixture("history.json")
    rsps.add("GET", f"{API}/history", json={"history": history["history"][2:], "historyId": "987210"},
             match=[responses.matchers.query_param_matcher({"pageToken": "hp2"}, strict_match=False)])
    rsps.add("GET", f"{API}/history", json={"history": history["history"][:2], "nextPageToken": "hp2",
                                            "historyId": "987210"},
             match=[responses.matchers.query_param_matcher({"startHistoryId": "987100"}, strict_match=False)])
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.entities_inserted, job.entities_deleted) == ("completed", 1, 2), job.error_details
    remaining = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert remaining == {OFFSITE, f"{OFFSITE}#attachment-1", REMINDER}
    assert connection.sync.cursor.data == {"history_id": "987210", "query": ""}
    reminder = Entity.objects.get(source_connection=connection, entity_id=REMINDER)
    assert reminder.breadcrumbs[1]["entity_id"] == OFFSITE  # the thread's first message


def test_an_expired_history_id_lists_everything(rsps):
    serve_gmail(rsps)
    rsps.add("GET", f"{API}/history", status=404, json={"error": {
        "code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
        "errors": [{"message": "Requested entity was not found.", "domain": "global", "reason": "notFound"}]}})
    source = make(include_attachments=False)
    assert len(list(source.generate_entities({"history_id": "12", "query": ""}))) == 3
    assert source.is_full_listing()
