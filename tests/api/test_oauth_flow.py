"""The OAuth browser flow over REST: POST /source-connections → auth_url (one-time claim link) →
provider → GET /source-connections/callback; bring-your-own client, PKCE, OAuth 1, token injection.

Our endpoints run through Django's test client; the provider's token endpoints are answered by
`responses` at the transport level, so requests-oauthlib's real code builds and parses them.
"""
from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import responses
from rest_framework.test import APIClient

from airweave.collections.models import SourceConnection, SyncJob
from airweave.crypto import decrypt_json
from connectors.authorization import start_authorization
from connectors.base import BaseEntity, BaseSource
from connectors.registry import source_for_connection
from tests.connectors.saas_helpers import registered, write_providers

AUTH = "https://auth.example.com"
API = "https://api.example.com"
APP = "https://app.example.com/connected"


@dataclass
class DocEntity(BaseEntity):
    body: str = ""

    def textual_representation(self) -> str:
        return self.body


class DocsSource(BaseSource):
    def generate_entities(self, cursor):
        for doc in self.http.get_json("/docs"):
            yield DocEntity(entity_id=doc["id"], name=doc["title"], body=doc["body"])


@pytest.fixture
def providers(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCS_CLIENT_ID", "deployment-client")
    monkeypatch.setenv("DOCS_CLIENT_SECRET", "deployment-secret")
    settings.AIRWEAVE_PUBLIC_URL = "https://airweave.example.org"
    settings.AIRWEAVE_OAUTH_PROVIDERS_FILE = write_providers(tmp_path / "providers.yml", {
        "docs": {"authorization_url": f"{AUTH}/authorize", "token_url": f"{AUTH}/token", "pkce": True,
                 "scopes": ["docs.read", "offline"], "authorize_params": {"access_type": "offline"},
                 "oauth_type": "with_refresh", "client_id_env": "DOCS_CLIENT_ID",
                 "client_secret_env": "DOCS_CLIENT_SECRET"},
        "byoc_docs": {"authorization_url": "https://{subdomain}.example.net/authorize",
                      "token_url": "https://{subdomain}.example.net/token", "client_auth": "basic"},
        "boards": {"oauth_version": 1, "oauth_type": "oauth1", "request_token_url": f"{AUTH}/1/request_token",
                   "authorization_url": f"{AUTH}/1/authorize", "access_token_url": f"{AUTH}/1/access_token",
                   "authorize_params": {"scope": "read", "expiration": "never"}},
    })


@pytest.fixture
def sources(providers):
    from connectors.base import ConfigField

    oauth = ("oauth_browser", "oauth_token", "oauth_byoc")
    with registered(type("Docs", (DocsSource,), {}), name="Docs", short_name="docs", auth_methods=oauth,
                    oauth_type="with_refresh", base_url=API), \
         registered(type("ByocDocs", (DocsSource,), {}), name="BYOC Docs", short_name="byoc_docs",
                    auth_methods=("oauth_byoc",), requires_byoc=True, base_url=API,
                    config_fields=(ConfigField("subdomain", "Subdomain", required=True),)), \
         registered(type("Boards", (DocsSource,), {}), name="Boards", short_name="boards",
                    auth_methods=("oauth_browser", "oauth_byoc"), oauth_type="oauth1", base_url=API):
        yield


@pytest.fixture
def rsps():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def collection(make_collection):
    return make_collection()


def create(client, short_name="docs", **body):
    return client.post("/source-connections", {"short_name": short_name, "readable_collection_id": "docs", **body},
                       format="json")


def open_link(auth_url):
    """A browser opening auth_url: returns (browser, provider URL it was sent to)."""
    browser = APIClient()
    response = browser.get(urlsplit(auth_url).path)
    assert response.status_code == 302, response.content
    return browser, response["Location"]


def callback(browser, **params):
    return browser.get("/source-connections/callback", params)


def test_browser_flow_with_pkce_from_create_to_an_active_synced_connection(client, collection, sources, rsps):
    response = create(client, authentication={"redirect_uri": APP})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "pending_auth" and body["auth"]["method"] == "oauth_browser"
    assert body["auth"]["authenticated"] is False and body["auth"]["redirect_url"] == APP
    auth_url = body["auth"]["auth_url"]
    assert auth_url.startswith("https://airweave.example.org/source-connections/authorize/")
    assert body["auth"]["auth_url_expires"]
    assert SyncJob.objects.count() == 0  # nothing to sync before the user authorizes

    browser, provider_url = open_link(auth_url)
    assert provider_url.startswith(f"{AUTH}/authorize?")
    q = {k: v[0] for k, v in parse_qs(urlsplit(provider_url).query).items()}
    assert q["client_id"] == "deployment-client" and q["response_type"] == "code"
    assert q["redirect_uri"] == "https://airweave.example.org/source-connections/callback"
    assert q["scope"] == "docs.read offline" and q["access_type"] == "offline"
    assert q["code_challenge_method"] == "S256" and q["state"].startswith(body["id"])
    assert client.get(f"/source-connections/{body['id']}").json()["auth"].get("auth_url") is None  # opened: gone

    token = rsps.add("POST", f"{AUTH}/token", json={"access_token": "at-1", "refresh_token": "rt-1",
                                                   "expires_in": 3600, "token_type": "Bearer", "scope": "docs.read"})
    rsps.add("GET", f"{API}/docs", json=[{"id": "d1", "title": "Roadmap", "body": "Connectors first."}],
             match=[responses.matchers.header_matcher({"Authorization": "Bearer at-1"})])
    done = callback(browser, state=q["state"], code="the-code")

    assert done.status_code == 302
    back = urlsplit(done["Location"])
    assert f"{back.scheme}://{back.netloc}{back.path}" == APP
    assert parse_qs(back.query) == {"status": ["success"], "source_connection_id": [body["id"]]}
    form = {k: v[0] for k, v in parse_qs(token.calls[0].request.body).items()}
    assert form["grant_type"] == "authorization_code" and form["code"] == "the-code"
    assert form["redirect_uri"] == q["redirect_uri"] and form["client_id"] == "deployment-client"
    challenge = base64.urlsafe_b64encode(hashlib.sha256(form["code_verifier"].encode()).digest()).rstrip(b"=")
    assert challenge.decode() == q["code_challenge"]

    detail = client.get(f"/source-connections/{body['id']}").json()
    assert detail["auth"]["authenticated"] is True and detail["auth"]["authenticated_at"]
    assert detail["auth"]["expires_at"] and detail["error_category"] is None
    assert detail["status"] == "active" and detail["sync"]["last_job"]["status"] == "completed"
    assert detail["entities"]["total_entities"] == 1
    credentials = decrypt_json(SourceConnection.objects.get(pk=body["id"]).encrypted_credentials)
    assert credentials["access_token"] == "at-1" and credentials["refresh_token"] == "rt-1"
    assert "_oauth_pending" not in credentials

    replay = callback(browser, state=q["state"], code="the-code")
    assert replay.status_code == 400 and "already used" in replay.json()["detail"]


def test_the_link_opens_once(client, collection, sources):
    auth_url = create(client, authentication={}).json()["auth"]["auth_url"]
    open_link(auth_url)
    again = APIClient().get(urlsplit(auth_url).path)
    assert again.status_code == 410 and "already opened" in again.json()["detail"]
    assert APIClient().get("/source-connections/authorize/not-a-claim").status_code == 400


def test_a_callback_from_another_browser_is_refused(client, collection, sources):
    body = create(client, authentication={"redirect_uri": APP}).json()
    _, provider_url = open_link(body["auth"]["auth_url"])
    state = parse_qs(urlsplit(provider_url).query)["state"][0]
    response = callback(APIClient(), state=state, code="stolen")  # no cookie: not the browser that opened the link
    assert response.status_code == 302
    assert parse_qs(urlsplit(response["Location"]).query)["status"] == ["error"]
    connection = SourceConnection.objects.get(pk=body["id"])
    assert connection.error_category == "oauth_error" and "same browser" in connection.error_message
    assert connection.status == "pending_auth" and not connection.is_authenticated


def test_a_user_who_denies_access_is_sent_back_with_the_error(client, collection, sources):
    body = create(client, authentication={"redirect_uri": APP}).json()
    browser, provider_url = open_link(body["auth"]["auth_url"])
    state = parse_qs(urlsplit(provider_url).query)["state"][0]
    response = callback(browser, state=state, error="access_denied", error_description="The user said no")
    back = parse_qs(urlsplit(response["Location"]).query)
    assert back["status"] == ["error"] and back["error"] == ["oauth_error"] and "said no" in back["message"][0]


def test_an_unknown_or_tampered_state_is_a_clear_400(client, collection, sources):
    body = create(client, authentication={}).json()
    for state in ["", "garbage", f"{body['id']}.forged"]:
        response = APIClient().get("/source-connections/callback", {"state": state, "code": "x"})
        assert response.status_code == 400 and "start the authorization again" in response.json()["detail"]


def test_an_expired_link_is_410(client, collection, sources, settings):
    body = create(client, authentication={}).json()
    settings.AIRWEAVE_OAUTH_FLOW_MINUTES = 0
    auth_url = start_authorization(SourceConnection.objects.get(pk=body["id"]))
    assert client.get(f"/source-connections/{body['id']}").json()["auth"].get("auth_url") is None
    response = APIClient().get(urlsplit(auth_url).path)
    assert response.status_code == 410 and "expired" in response.json()["detail"]


def test_a_refused_code_leaves_the_connection_unauthenticated(client, collection, sources, rsps):
    body = create(client, authentication={}).json()
    browser, provider_url = open_link(body["auth"]["auth_url"])
    state = parse_qs(urlsplit(provider_url).query)["state"][0]
    rsps.add("POST", f"{AUTH}/token", status=400, json={"error": "invalid_grant", "error_description": "code used"})
    response = callback(browser, state=state, code="old")
    assert response.status_code == 400 and "invalid_grant" in response.json()["detail"]
    connection = SourceConnection.objects.get(pk=body["id"])
    assert (connection.status, connection.error_category) == ("pending_auth", "oauth_error")


def test_bring_your_own_client_with_basic_client_auth_and_a_templated_host(client, collection, sources, rsps):
    response = create(client, "byoc_docs", config={"subdomain": "acme"},
                      authentication={"client_id": "my-app", "client_secret": "my-secret"}, sync_immediately=False)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["auth"]["method"] == "oauth_byoc" and "my-secret" not in response.content.decode()
    browser, provider_url = open_link(body["auth"]["auth_url"])
    assert provider_url.startswith("https://acme.example.net/authorize?")
    q = {k: v[0] for k, v in parse_qs(urlsplit(provider_url).query).items()}
    assert q["client_id"] == "my-app" and "code_challenge" not in q  # this provider needs no PKCE
    token = rsps.add("POST", "https://acme.example.net/token", json={"access_token": "at", "token_type": "bearer",
                                                                    "workspace_id": "w-9"})
    assert callback(browser, state=q["state"], code="c").json() == {"status": "success",
                                                                   "source_connection_id": body["id"]}
    request = token.calls[0].request
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"my-app:my-secret").decode()
    credentials = decrypt_json(SourceConnection.objects.get(pk=body["id"]).encrypted_credentials)
    assert credentials == {"client_id": "my-app", "client_secret": "my-secret", "access_token": "at",
                           "token_type": "bearer", "workspace_id": "w-9"}
    assert SyncJob.objects.count() == 0  # sync_immediately=false


def test_a_source_that_requires_byoc_refuses_a_flow_without_client(client, collection, sources):
    response = create(client, "byoc_docs", config={"subdomain": "acme"}, authentication={})
    assert response.status_code == 422 and "client_id" in str(response.json())


def test_a_provider_without_deployment_client_asks_for_one(client, collection, sources, monkeypatch):
    monkeypatch.delenv("DOCS_CLIENT_ID")
    response = create(client, authentication={})
    assert response.status_code == 422 and "DOCS_CLIENT_ID" in str(response.json())
    assert SourceConnection.objects.count() == 0


def test_oauth1_flow_stores_the_access_token_and_signs_requests(client, collection, sources, rsps):
    rsps.add("POST", f"{AUTH}/1/request_token", body="oauth_token=req-1&oauth_token_secret=req-secret"
             "&oauth_callback_confirmed=true", content_type="application/x-www-form-urlencoded")
    body = create(client, "boards", authentication={"consumer_key": "ck", "consumer_secret": "cs"},
                  sync_immediately=False).json()
    assert body["auth"]["method"] == "oauth_byoc"
    header = rsps.calls[0].request.headers["Authorization"]
    header = header.decode() if isinstance(header, bytes) else header
    params = dict(part.strip().split("=", 1) for part in header[len("OAuth "):].split(","))
    callback_url = unquote(params["oauth_callback"].strip('"'))  # what the provider will redirect to
    assert callback_url.startswith("https://airweave.example.org/source-connections/callback?state=")
    browser, provider_url = open_link(body["auth"]["auth_url"])
    q = {k: v[0] for k, v in parse_qs(urlsplit(provider_url).query).items()}
    assert q == {"oauth_token": "req-1", "scope": "read", "expiration": "never"}
    rsps.add("POST", f"{AUTH}/1/access_token", body="oauth_token=acc-1&oauth_token_secret=acc-secret",
             content_type="application/x-www-form-urlencoded")
    response = browser.get(urlsplit(callback_url).path + "?" + urlsplit(callback_url).query
                           + "&oauth_token=req-1&oauth_verifier=ver-1")
    assert response.status_code == 200, response.content
    connection = SourceConnection.objects.get(pk=body["id"])
    credentials = decrypt_json(connection.encrypted_credentials)
    assert (credentials["oauth_token"], credentials["oauth_token_secret"]) == ("acc-1", "acc-secret")
    rsps.add("GET", f"{API}/docs", json=[])
    list(source_for_connection(connection).generate_entities({}))
    header = rsps.calls[-1].request.headers["Authorization"]
    header = header.decode() if isinstance(header, bytes) else header
    assert 'oauth_consumer_key="ck"' in header and 'oauth_token="acc-1"' in header


def test_token_injection(client, collection, sources, rsps):
    rsps.add("GET", f"{API}/docs", json=[{"id": "d1", "title": "Plan", "body": "Ship it."}])
    response = create(client, authentication={"access_token": "injected", "refresh_token": "r",
                                              "expires_at": "2031-01-01T00:00:00Z"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["auth"]["method"] == "oauth_token" and body["auth"]["authenticated"] is True
    assert body["auth"]["expires_at"].startswith("2031-01-01")
    assert "injected" not in response.content.decode()
    credentials = decrypt_json(SourceConnection.objects.get(pk=body["id"]).encrypted_credentials)
    assert credentials["expires_at"] == 1924992000.0
    assert rsps.calls[-1].request.headers["Authorization"] == "Bearer injected"  # synced at once


@pytest.mark.parametrize("authentication, field", [
    ({"access_token": "t", "credentials": {}}, "credentials"),
    ({"access_token": "t", "client_id": "x"}, "authentication"),
    ({"access_token": "t", "expires_at": "next week"}, "authentication.expires_at"),
    ({"client_secret": "s"}, "authentication"),
    ({"redirect_uri": "javascript:alert(1)"}, "redirect_uri"),
    ({"token": "t"}, "token"),
])
def test_bad_authentication_is_a_422_naming_the_field(client, collection, sources, authentication, field):
    response = create(client, authentication=authentication)
    assert response.status_code == 422, response.content
    assert field in str(response.json())


def test_a_direct_only_source_refuses_tokens_and_browser_flows(client, collection, sources, tmp_path, settings):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    for authentication in ({"access_token": "t"}, {"redirect_uri": APP}):
        response = create(client, "local_files", config={"path": str(tmp_path)}, authentication=authentication)
        assert response.status_code == 422 and "auth methods: direct" in str(response.json())


def test_start_authorization_reauthorizes_a_connection_that_needs_it(client, collection, sources, rsps):
    body = create(client, authentication={"access_token": "old"}, sync_immediately=False).json()
    connection = SourceConnection.objects.get(pk=body["id"])
    SourceConnection.objects.filter(pk=connection.pk).update(status="needs_reauth", is_authenticated=False,
                                                               error_category="refresh_failed")
    url = start_authorization(connection, "https://admin.example.org/back")
    assert SourceConnection.objects.get(pk=connection.pk).status == "needs_reauth"  # until the callback succeeds
    browser, provider_url = open_link(url)
    state = parse_qs(urlsplit(provider_url).query)["state"][0]
    rsps.add("POST", f"{AUTH}/token", json={"access_token": "new", "refresh_token": "r2", "expires_in": 60})
    response = callback(browser, state=state, code="c")
    assert response["Location"].startswith("https://admin.example.org/back?status=success")
    connection.refresh_from_db()
    assert (connection.status, connection.is_authenticated, connection.error_category) == ("active", True, "")
    assert decrypt_json(connection.encrypted_credentials)["access_token"] == "new"


def test_verify_oauth_waits_for_the_flow_and_reinitiate_issues_a_new_link(client, collection, sources, rsps):
    """Issue 12: POST /source-connections/{id}/verify-oauth and /reinitiate-oauth, as Airweave's API users call them."""
    body = create(client, redirect_url=APP).json()  # the top-level redirect_url of Airweave's create
    assert body["auth"]["method"] == "oauth_browser" and body["auth"]["redirect_url"] == APP
    waiting = client.post(f"/source-connections/{body['id']}/verify-oauth")
    assert waiting.status_code == 409 and "reinitiate-oauth" in waiting.json()["detail"]

    open_link(body["auth"]["auth_url"])  # the first link is spent
    again = client.post(f"/source-connections/{body['id']}/reinitiate-oauth/")
    assert again.status_code == 200, again.content
    fresh = again.json()["auth"]
    assert fresh["auth_url"] and fresh["auth_url"] != body["auth"]["auth_url"] and fresh["redirect_url"] == APP

    browser, provider_url = open_link(fresh["auth_url"])
    q = {k: v[0] for k, v in parse_qs(urlsplit(provider_url).query).items()}
    rsps.add("POST", f"{AUTH}/token", json={"access_token": "at-9", "expires_in": 3600, "token_type": "Bearer"})
    rsps.add("GET", f"{API}/docs", json=[])
    assert callback(browser, state=q["state"], code="c").status_code == 302
    verified = client.post(f"/source-connections/{body['id']}/verify-oauth")
    assert verified.status_code == 200 and verified.json()["auth"]["authenticated"] is True


def test_reinitiate_oauth_refuses_a_direct_connection(client, collection, sources, settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    body = create(client, short_name="local_files", config={"path": str(tmp_path)}, sync_immediately=False).json()
    r = client.post(f"/source-connections/{body['id']}/reinitiate-oauth")
    assert r.status_code == 422 and "not an OAuth browser flow" in r.json()["detail"][0]["msg"]
