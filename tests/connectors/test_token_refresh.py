"""Auth underneath `source.http`: OAuth 2 refresh (proactive, after a 401, rotating), needs_reauth, API keys.

The source under test is a small SaaS source registered for each test; the API and the
provider's token endpoint are answered by `responses` at the transport level.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import parse_qs

import pytest
import responses

from airweave.collections.models import SourceConnection
from airweave.crypto import decrypt_json
from connectors.auth.tokens import BasicAuth, BearerAuth, HeaderAuth, OAuth1Auth, QueryAuth
from connectors.base import AuthFailure, BaseEntity, BaseSource, SourceError
from connectors.http import HttpClient
from connectors.registry import source_for_connection
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.connectors.saas_helpers import registered, write_providers

API = "https://api.example.com"
TOKEN_URL = "https://auth.example.com/oauth/token"


@dataclass
class NoteEntity(BaseEntity):
    body: str = ""

    def textual_representation(self) -> str:
        return self.body


class NotesSource(BaseSource):
    """Lists notes from GET /notes (one page)."""

    def generate_entities(self, cursor):
        for note in self.http.get_json("/notes"):
            yield NoteEntity(entity_id=str(note["id"]), name=note["title"], body=note["body"])


@pytest.fixture
def notes_source(settings, tmp_path):
    settings.AIRWEAVE_OAUTH_PROVIDERS_FILE = write_providers(tmp_path / "providers.yml", {
        "notes": {"authorization_url": "https://auth.example.com/oauth/authorize", "token_url": TOKEN_URL,
                  "oauth_type": "with_rotating_refresh", "scopes": ["read"]},
    })
    with registered(NotesSource, name="Notes", short_name="notes", auth_methods=("oauth_browser", "oauth_token"),
                    oauth_type="with_rotating_refresh", base_url=API, entity_types=(NoteEntity,)):
        yield NotesSource


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


@pytest.fixture
def connect(make_collection, notes_source):
    collection = make_collection()

    def make(**credentials):
        credentials = {"access_token": "a1", "refresh_token": "r1", "client_id": "cid", "client_secret": "csecret",
                       **credentials}
        return source_connection_create(collection=collection, short_name="notes", credentials=credentials,
                                        sync_immediately=False, for_api=False)

    return make


def stored(connection) -> dict:
    connection.refresh_from_db()
    return decrypt_json(connection.encrypted_credentials)


def bearer(token):
    return [responses.matchers.header_matcher({"Authorization": f"Bearer {token}"})]


NOTES = [{"id": 1, "title": "Quarterly plan", "body": "We ship the connector framework first."}]


def test_401_refreshes_once_retries_and_persists_the_rotated_refresh_token(rsps, connect):
    connection = connect()
    rsps.add("GET", f"{API}/notes", status=401, json={"message": "token expired"}, match=bearer("a1"))
    token_call = rsps.add("POST", TOKEN_URL, json={"access_token": "a2", "refresh_token": "r2", "expires_in": 3600,
                                                   "token_type": "Bearer"})
    rsps.add("GET", f"{API}/notes", json=NOTES, match=bearer("a2"))

    entities = list(source_for_connection(connection).generate_entities({}))

    assert [e.name for e in entities] == ["Quarterly plan"]
    form = parse_qs(token_call.calls[0].request.body)
    assert form["grant_type"] == ["refresh_token"] and form["refresh_token"] == ["r1"]
    assert form["client_id"] == ["cid"] and form["client_secret"] == ["csecret"]  # the connection's own client
    creds = stored(connection)
    assert (creds["access_token"], creds["refresh_token"]) == ("a2", "r2")
    assert time.time() + 3500 < creds["expires_at"] < time.time() + 3700
    assert creds["client_id"] == "cid"  # the rest of the credentials is kept


def test_a_token_about_to_expire_is_refreshed_before_the_request(rsps, connect):
    connection = connect(expires_at=time.time() + 30)
    rsps.add("POST", TOKEN_URL, json={"access_token": "a2", "refresh_token": "r2", "expires_in": 3600})
    rsps.add("GET", f"{API}/notes", json=NOTES, match=bearer("a2"))
    assert len(list(source_for_connection(connection).generate_entities({}))) == 1
    assert [c.request.url for c in rsps.calls] == [TOKEN_URL, f"{API}/notes"]
    assert stored(connection)["refresh_token"] == "r2"


def test_a_provider_that_does_not_rotate_keeps_the_old_refresh_token(rsps, connect):
    connection = connect(expires_at=time.time() - 5)
    rsps.add("POST", TOKEN_URL, json={"access_token": "a2", "expires_in": 3600})
    rsps.add("GET", f"{API}/notes", json=NOTES, match=bearer("a2"))
    list(source_for_connection(connection).generate_entities({}))
    assert stored(connection)["refresh_token"] == "r1"


def test_a_token_refreshed_by_another_worker_is_adopted_without_spending_the_refresh_token(rsps, connect):
    connection = connect()
    source = source_for_connection(connection)  # holds a1/r1
    # Meanwhile another worker rotated the token and stored it.
    from connectors.auth.store import ConnectionCredentialStore
    ConnectionCredentialStore(connection.id).save({
        **stored(connection), "access_token": "a2", "refresh_token": "r2", "expires_at": time.time() + 3600})
    rsps.add("GET", f"{API}/notes", status=401, match=bearer("a1"))
    rsps.add("GET", f"{API}/notes", json=NOTES, match=bearer("a2"))
    assert len(list(source.generate_entities({}))) == 1  # no call to the token endpoint was registered


def test_a_second_401_marks_the_connection_needs_reauth(rsps, connect):
    connection = connect()
    rsps.add("GET", f"{API}/notes", status=401, match=bearer("a1"))
    rsps.add("POST", TOKEN_URL, json={"access_token": "a2", "refresh_token": "r2", "expires_in": 3600})
    rsps.add("GET", f"{API}/notes", status=401, match=bearer("a2"))
    with pytest.raises(AuthFailure) as info:
        list(source_for_connection(connection).generate_entities({}))
    assert info.value.category == "invalid_credentials"
    connection.refresh_from_db()
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH and not connection.is_authenticated
    assert connection.error_category == "invalid_credentials"
    assert stored(connection)["refresh_token"] == "r2"  # the rotated token was still saved


def test_a_refused_refresh_token_fails_the_job_and_marks_needs_reauth(rsps, connect):
    connection = connect()
    rsps.add("GET", f"{API}/notes", status=401, match=bearer("a1"))
    rsps.add("POST", TOKEN_URL, status=400, json={"error": "invalid_grant", "error_description": "Token revoked"})
    job = sync_job_start(source_connection=connection, enqueue=False)
    job = sync_job_run(job_id=job.id)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "refresh_failed")
    assert "Token revoked" in job.error
    assert connection.status == "needs_reauth" and connection.error_category == "refresh_failed"
    assert connection.is_authenticated is False


def test_an_expired_token_without_refresh_token_is_token_expired(rsps, connect):
    connection = connect(refresh_token=None, expires_at=time.time() - 60)
    rsps.add("GET", f"{API}/notes", status=401, match=bearer("a1"))
    with pytest.raises(AuthFailure) as info:
        list(source_for_connection(connection).generate_entities({}))
    assert info.value.category == "token_expired"
    connection.refresh_from_db()
    assert connection.error_category == "token_expired"


def test_a_failing_token_endpoint_is_not_a_reauth(rsps, connect):
    connection = connect(expires_at=time.time() - 5)
    rsps.add("POST", TOKEN_URL, status=503, body="maintenance")
    with pytest.raises(SourceError) as info:
        list(source_for_connection(connection).generate_entities({}))
    assert info.value.category == "token_endpoint_error"
    connection.refresh_from_db()
    assert connection.status != "needs_reauth"


def test_a_sync_through_source_http_indexes_and_completes(rsps, connect):
    connection = connect()
    rsps.add("GET", f"{API}/notes", json=NOTES, match=bearer("a1"))
    job = sync_job_start(source_connection=connection, enqueue=False)
    job = sync_job_run(job_id=job.id)
    assert (job.status, job.entities_inserted) == ("completed", 1)
    connection.refresh_from_db()
    assert connection.status == "active"


# --- API keys and OAuth 1: no refresh, just signatures -----------------------------------

@pytest.fixture
def echo(rsps):
    rsps.add("GET", f"{API}/me", json={})
    return lambda auth: (HttpClient(base_url=API, auth=auth).get("/me"), rsps.calls[-1].request)[1]


def test_bearer_header_basic_and_query_auth(echo):
    assert echo(BearerAuth("k1")).headers["Authorization"] == "Bearer k1"
    assert echo(HeaderAuth({"X-Api-Key": "k2"})).headers["X-Api-Key"] == "k2"
    assert echo(BasicAuth("ann@example.com", "tok")).headers["Authorization"] == "Basic YW5uQGV4YW1wbGUuY29tOnRvaw=="
    request = echo(QueryAuth({"key": "k3", "token": "t3"}))
    assert "key=k3" in request.url and "token=t3" in request.url


def test_an_api_key_401_is_invalid_credentials_without_refresh(rsps):
    rsps.add("GET", f"{API}/me", status=401)
    marked = []
    with pytest.raises(AuthFailure) as info:
        HttpClient(base_url=API, auth=BearerAuth("bad"), on_auth_failure=marked.append).get("/me")
    assert info.value.category == "invalid_credentials" and marked == [info.value]
    assert len(rsps.calls) == 1


def test_oauth1_signs_requests(echo):
    request = echo(OAuth1Auth(client_key="ck", client_secret="cs", resource_owner_key="tok", resource_owner_secret="ts"))
    header = request.headers["Authorization"]
    header = header.decode() if isinstance(header, bytes) else header
    assert header.startswith("OAuth ") and 'oauth_consumer_key="ck"' in header and 'oauth_token="tok"' in header
    assert 'oauth_signature_method="HMAC-SHA1"' in header
