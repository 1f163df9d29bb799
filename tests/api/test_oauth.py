"""The OAuth 2.1 authorization server through Django's test client: metadata, registration,
consent, PKCE (S256 only), code and refresh-token exchange with rotation, revocation, and the
tokens on the REST API (one organization only)."""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from django.utils import timezone

from airweave.tenancy.models import Membership, OAuthClient, OAuthToken, User

HOST = "localhost"  # plain http is allowed on loopback hosts only (the test client's "testserver" is not one)
BASE = f"http://{HOST}"
REDIRECT = "http://127.0.0.1:8765/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@pytest.fixture
def anon(db):
    return Client(HTTP_HOST=HOST)


@pytest.fixture
def user(org, make_collection):
    user = User.objects.create_user("ada@example.com", "correct horse battery")
    Membership.objects.create(user=user, organization=org, role="member")
    make_collection(readable_id="docs", name="Team documents")
    return user


@pytest.fixture
def browser(user):
    c = Client(HTTP_HOST=HOST)
    c.force_login(user)
    return c


def register(client, **metadata) -> dict:
    body = {"redirect_uris": [REDIRECT], "client_name": "Test agent", "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}
    response = client.post("/oauth/register", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def authorize_url(client_id: str, challenge: str, **params) -> str:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "st4te",
             "code_challenge": challenge, "code_challenge_method": "S256", "resource": f"{BASE}/mcp", **params}
    return "/oauth/authorize?" + urlencode({k: v for k, v in query.items() if v is not None})


def redirect_params(response) -> dict:
    assert response.status_code == 302, response.content
    return {k: v[0] for k, v in parse_qs(urlsplit(response["Location"]).query).items()}


def grant_code(browser, client_id: str, challenge: str, organization=None, **params) -> str:
    url = authorize_url(client_id, challenge, **params)
    data = {"action": "allow", **({"organization": str(organization.pk)} if organization else {})}
    params = redirect_params(browser.post(url, data))
    assert params["state"] == "st4te", params
    return params["code"]


def exchange(client, client_id: str, code: str, verifier: str, **extra):
    return client.post("/oauth/token", {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                        "client_id": client_id, "code_verifier": verifier, **extra})


def refresh(client, client_id: str, refresh_token: str, **extra):
    return client.post("/oauth/token", {"grant_type": "refresh_token", "refresh_token": refresh_token,
                                        "client_id": client_id, **extra})


@pytest.fixture
def tokens(anon, browser):
    """A public client that went through the whole flow: {client_id, access_token, refresh_token, ...}."""
    client_id = register(anon)["client_id"]
    verifier, challenge = pkce()
    response = exchange(anon, client_id, grant_code(browser, client_id, challenge), verifier)
    assert response.status_code == 200, response.content
    return {"client_id": client_id, **response.json()}


def api(anon, token, path="/collections"):
    return anon.get(path, headers={"Authorization": f"Bearer {token}"})


# --- metadata -----------------------------------------------------------------------------------

def test_authorization_server_metadata(anon):
    response = anon.get("/.well-known/oauth-authorization-server")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    meta = response.json()
    assert meta["issuer"] == BASE
    assert meta["authorization_endpoint"] == f"{BASE}/oauth/authorize"
    assert meta["token_endpoint"] == f"{BASE}/oauth/token"
    assert meta["registration_endpoint"] == f"{BASE}/oauth/register"
    assert meta["revocation_endpoint"] == f"{BASE}/oauth/revoke"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert set(meta["token_endpoint_auth_methods_supported"]) == {"none", "client_secret_basic", "client_secret_post"}


def test_protected_resource_metadata_of_the_api_and_of_mcp(anon, settings):
    assert anon.get("/.well-known/oauth-protected-resource").json()["resource"] == BASE
    mcp = anon.get("/.well-known/oauth-protected-resource/mcp").json()
    assert mcp["resource"] == f"{BASE}/mcp" and mcp["authorization_servers"] == [BASE]
    settings.AIRWEAVE_PUBLIC_URL = "https://search.example.com/"
    assert anon.get("/.well-known/oauth-protected-resource/mcp").json()["authorization_servers"] == [
        "https://search.example.com"]


def test_cors_preflight_of_the_token_endpoint(anon):
    response = anon.options("/oauth/token")
    assert response.status_code == 204 and response["Access-Control-Allow-Origin"] == "*"
    assert "Authorization" in response["Access-Control-Allow-Headers"]


# --- registration (RFC 7591) --------------------------------------------------------------------

def test_public_registration_has_no_secret_and_expires(anon):
    info = register(anon)
    assert info["client_id"].startswith("awc_") and "client_secret" not in info
    assert info["redirect_uris"] == [REDIRECT] and info["token_endpoint_auth_method"] == "none"
    client = OAuthClient.objects.get(client_id=info["client_id"])
    assert client.secret_hash == "" and timezone.now() < client.expires_at < timezone.now() + timedelta(days=2)


def test_confidential_registration_gets_a_secret_stored_hashed(anon):
    info = register(anon, token_endpoint_auth_method="client_secret_basic")
    client = OAuthClient.objects.get(client_id=info["client_id"])
    assert info["client_secret"] and info["client_secret"] not in client.secret_hash
    assert client.secret_hash == hashlib.sha256(info["client_secret"].encode()).hexdigest()
    assert info["client_secret_expires_at"] == int(client.expires_at.timestamp())


def test_registration_defaults_to_client_secret_basic_as_rfc_7591_says(anon):
    body = {"redirect_uris": [REDIRECT]}
    info = anon.post("/oauth/register", json.dumps(body), content_type="application/json").json()
    assert info["token_endpoint_auth_method"] == "client_secret_basic" and info["client_secret"]
    assert info["grant_types"] == ["authorization_code"] and info["response_types"] == ["code"]


@pytest.mark.parametrize("metadata, error", [
    ({"redirect_uris": []}, "invalid_redirect_uri"),
    ({"redirect_uris": "https://a.example/cb"}, "invalid_redirect_uri"),
    ({"redirect_uris": ["http://agent.example.com/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://a.example/cb#frag"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["/relative"]}, "invalid_redirect_uri"),
    ({"redirect_uris": [REDIRECT] * 11}, "invalid_redirect_uri"),
    ({"grant_types": ["password"]}, "invalid_client_metadata"),
    ({"grant_types": ["refresh_token"]}, "invalid_client_metadata"),
    ({"response_types": ["token"]}, "invalid_client_metadata"),
    ({"token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"),
    ({"client_name": 42}, "invalid_client_metadata"),
])
def test_registration_refuses_bad_metadata(anon, metadata, error):
    body = {"redirect_uris": [REDIRECT], **metadata}
    response = anon.post("/oauth/register", json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] == error


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b""])
def test_registration_refuses_a_body_that_is_not_a_json_object(anon, body):
    response = anon.post("/oauth/register", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("uri", ["https://claude.ai/api/mcp/auth_callback", "cursor://anysphere.cursor-mcp/oauth",
                                 "http://localhost:33418/", "http://[::1]:9000/cb", "com.example.agent:/callback"])
def test_registration_accepts_https_loopback_and_private_use_redirects(anon, uri):
    assert register(anon, redirect_uris=[uri])["redirect_uris"] == [uri]


# --- authorization and consent --------------------------------------------------------------------

def test_authorization_needs_a_logged_in_user(anon, settings):
    client_id = register(anon)["client_id"]
    response = anon.get(authorize_url(client_id, pkce()[1]))
    assert response.status_code == 302
    assert response["Location"].startswith(settings.LOGIN_URL + "?next=/oauth/authorize")


def test_consent_page_names_the_client_the_organization_and_its_collections(anon, browser, org):
    client_id = register(anon, client_name="Claude")["client_id"]
    response = browser.get(authorize_url(client_id, pkce()[1]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Allow <strong>Claude</strong>" in page and "127.0.0.1:8765" in page
    assert org.name in page and "Team documents" in page and "(docs)" in page
    assert 'value="allow"' in page and "csrfmiddlewaretoken" in page
    assert response["X-Frame-Options"] == "DENY" and "no-store" in response["Cache-Control"]
    # the grant acts as the user (access control applies), not as an organization-wide API key
    assert "act as you" in page and "only the documents you may see" in page and "API key" not in page


def test_a_user_in_several_organizations_chooses_one(anon, browser, user, other_org, make_collection):
    Membership.objects.create(user=user, organization=other_org)
    make_collection(readable_id="globex-plans", name="Globex plans", organization=other_org)
    client_id = register(anon)["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge)
    page = browser.get(url).content.decode()
    assert "Acme" in page and "Globex" in page and "Globex plans" in page
    unchosen = browser.post(url, {"action": "allow"})
    assert unchosen.status_code == 400 and "Choose the organization" in unchosen.content.decode()
    code = grant_code(browser, client_id, challenge, organization=other_org)
    access = exchange(anon, client_id, code, verifier).json()["access_token"]
    assert [c["readable_id"] for c in api(anon, access).json()] == ["globex-plans"]
    assert OAuthToken.objects.get().organization == other_org


def test_a_user_cannot_grant_an_organization_they_do_not_belong_to(anon, browser, other_org):
    client_id = register(anon)["client_id"]
    response = browser.post(authorize_url(client_id, pkce()[1]), {"action": "allow",
                                                                  "organization": str(other_org.pk)})
    assert response.status_code == 400 and not OAuthToken.objects.exists()


def test_a_user_without_organization_can_only_deny(anon, db):
    loner = User.objects.create_user("loner@example.com", "x")
    browser = Client(HTTP_HOST=HOST)
    browser.force_login(loner)
    client_id = register(anon)["client_id"]
    page = browser.get(authorize_url(client_id, pkce()[1])).content.decode()
    assert "do not belong to any organization" in page and 'value="allow"' not in page


def test_deny_redirects_with_access_denied(anon, browser):
    client_id = register(anon)["client_id"]
    params = redirect_params(browser.post(authorize_url(client_id, pkce()[1]), {"action": "deny"}))
    assert params["error"] == "access_denied" and params["state"] == "st4te"


@pytest.mark.parametrize("params, error, description", [
    ({"code_challenge": None, "code_challenge_method": None}, "invalid_request", "PKCE is required"),
    ({"code_challenge_method": "plain"}, "invalid_request", "Only code_challenge_method=S256"),
    ({"code_challenge_method": None}, "invalid_request", "Only code_challenge_method=S256"),
    ({"resource": "https://elsewhere.example/mcp"}, "invalid_target", "is not served by this server"),
    ({"response_type": "token"}, "unsupported_response_type", ""),
])
def test_bad_authorization_requests_are_sent_back_to_the_client(anon, browser, params, error, description):
    client_id = register(anon)["client_id"]
    answer = redirect_params(browser.get(authorize_url(client_id, pkce()[1], **params)))
    assert answer["state"] == "st4te" and answer["error"] == error
    assert description in answer.get("error_description", "")


@pytest.mark.parametrize("params", [{"client_id": "awc_unknown"}, {"redirect_uri": "http://127.0.0.1:8765/other"},
                                    {"redirect_uri": "https://attacker.example/cb"}])
def test_unknown_client_or_redirect_uri_is_shown_not_redirected(anon, browser, params):
    params = {"client_id": register(anon)["client_id"], **params}
    url = authorize_url(challenge=pkce()[1], **params)
    response = browser.get(url)
    assert response.status_code == 400 and "cannot be completed" in response.content.decode()


def test_a_loopback_redirect_uri_matches_on_any_port(anon, browser):
    client_id = register(anon, redirect_uris=["http://127.0.0.1/callback"])["client_id"]
    verifier, challenge = pkce()
    code = grant_code(browser, client_id, challenge, redirect_uri="http://127.0.0.1:54321/callback")
    response = anon.post("/oauth/token", {"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                          "redirect_uri": "http://127.0.0.1:54321/callback", "code_verifier": verifier})
    assert response.status_code == 200, response.content


# --- tokens ---------------------------------------------------------------------------------------

def test_tokens_are_stored_hashed_and_act_for_one_organization(anon, tokens, org, other_org, make_collection):
    assert tokens["access_token"].startswith("awat_") and tokens["refresh_token"].startswith("awrt_")
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    row = OAuthToken.objects.get()
    assert row.access_token_hash == hashlib.sha256(tokens["access_token"].encode()).hexdigest()
    stored = json.dumps(list(OAuthToken.objects.values()), default=str)
    assert tokens["access_token"] not in stored and tokens["refresh_token"] not in stored
    assert row.organization == org and row.resource == f"{BASE}/mcp"

    make_collection(readable_id="globex-secrets", name="Globex secrets", organization=other_org)
    assert [c["readable_id"] for c in api(anon, tokens["access_token"]).json()] == ["docs"]
    assert api(anon, tokens["access_token"], "/collections/globex-secrets").status_code == 404
    assert api(anon, tokens["access_token"], "/collections/docs").status_code == 200


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_grant(anon, tokens):
    first = refresh(anon, tokens["client_id"], tokens["refresh_token"])
    assert first.status_code == 200, first.content
    rotated = first.json()
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert api(anon, tokens["access_token"]).status_code == 401  # the old pair is revoked
    assert api(anon, rotated["access_token"]).status_code == 200

    replay = refresh(anon, tokens["client_id"], tokens["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert api(anon, rotated["access_token"]).status_code == 401  # reuse detected: the whole grant is revoked
    assert refresh(anon, tokens["client_id"], rotated["refresh_token"]).status_code == 400


def test_a_refresh_token_only_works_for_its_client(anon, tokens):
    other_client = register(anon)["client_id"]
    assert refresh(anon, other_client, tokens["refresh_token"]).status_code == 400
    assert refresh(anon, tokens["client_id"], tokens["refresh_token"]).status_code == 200


def test_revocation_of_access_or_refresh_token_ends_the_grant(anon, tokens):
    response = anon.post("/oauth/revoke", {"token": tokens["refresh_token"], "client_id": tokens["client_id"]})
    assert response.status_code == 200
    assert api(anon, tokens["access_token"]).status_code == 401
    assert refresh(anon, tokens["client_id"], tokens["refresh_token"]).status_code == 400
    # unknown tokens are fine to revoke (RFC 7009 §2.2)
    assert anon.post("/oauth/revoke", {"token": "awat_nope", "client_id": tokens["client_id"]}).status_code == 200


def test_the_code_is_single_use_and_a_replay_revokes_its_tokens(anon, browser):
    client_id = register(anon)["client_id"]
    verifier, challenge = pkce()
    code = grant_code(browser, client_id, challenge)
    access = exchange(anon, client_id, code, verifier).json()["access_token"]
    replay = exchange(anon, client_id, code, verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert api(anon, access).status_code == 401


@pytest.mark.parametrize("extra, error", [
    ({"code_verifier": "x" * 50}, "invalid_grant"),
    ({"code_verifier": None}, "invalid_request"),
    ({"redirect_uri": "http://127.0.0.1:8765/other"}, "invalid_grant"),
])
def test_a_wrong_verifier_or_redirect_uri_burns_the_code(anon, browser, extra, error):
    client_id = register(anon)["client_id"]
    verifier, challenge = pkce()
    code = grant_code(browser, client_id, challenge)
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
            "code_verifier": verifier, **extra}
    response = anon.post("/oauth/token", {k: v for k, v in data.items() if v is not None})
    assert response.status_code == 400 and response.json()["error"] == error
    assert exchange(anon, client_id, code, verifier).status_code == 400


def test_a_confidential_client_must_authenticate(anon, browser):
    info = register(anon, token_endpoint_auth_method="client_secret_basic")
    verifier, challenge = pkce()
    code = grant_code(browser, info["client_id"], challenge)
    unauthenticated = exchange(anon, info["client_id"], code, verifier)
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"] == "invalid_client"
    code = grant_code(browser, info["client_id"], challenge)
    basic = base64.b64encode(f"{info['client_id']}:{info['client_secret']}".encode()).decode()
    response = anon.post("/oauth/token", {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                          "code_verifier": verifier}, headers={"Authorization": f"Basic {basic}"})
    assert response.status_code == 200, response.content


def test_expired_tokens_and_lost_memberships_are_refused(anon, tokens, user, org):
    OAuthToken.objects.update(access_expires_at=timezone.now() - timedelta(seconds=1))
    assert api(anon, tokens["access_token"]).status_code == 401
    OAuthToken.objects.update(access_expires_at=timezone.now() + timedelta(hours=1))
    assert api(anon, tokens["access_token"]).status_code == 200
    Membership.objects.filter(user=user, organization=org).delete()
    assert api(anon, tokens["access_token"]).status_code == 401
    assert refresh(anon, tokens["client_id"], tokens["refresh_token"]).status_code == 400


def test_an_expired_registration_can_neither_authorize_nor_refresh(anon, browser, tokens):
    OAuthClient.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert browser.get(authorize_url(tokens["client_id"], pkce()[1])).status_code == 400
    response = refresh(anon, tokens["client_id"], tokens["refresh_token"])
    assert response.status_code == 400 and response.json()["error"] == "invalid_client"


def test_plain_http_off_loopback_answers_a_clear_error(db):
    response = Client().post("/oauth/token", {"grant_type": "authorization_code"})  # Host: testserver, http
    assert response.status_code == 400 and response.json()["error"] == "insecure_transport"


def test_the_admin_lists_clients_and_tokens_and_revokes_grants(anon, tokens):
    User.objects.create_superuser("ops@example.com", "pw-123456")
    admin = Client(HTTP_HOST=HOST)
    admin.login(email="ops@example.com", password="pw-123456")
    assert admin.get("/admin/tenancy/oauthclient/").status_code == 200
    page = admin.get("/admin/tenancy/oauthtoken/")
    assert page.status_code == 200 and tokens["access_token"] not in page.content.decode()
    row = OAuthToken.objects.get()
    response = admin.post("/admin/tenancy/oauthtoken/", {"action": "revoke", "_selected_action": [str(row.pk)]})
    assert response.status_code == 302
    assert api(anon, tokens["access_token"]).status_code == 401


def test_a_rest_401_points_oauth_clients_at_the_resource_metadata(anon):
    response = anon.get("/collections")
    assert response.status_code == 401
    assert f'resource_metadata="{BASE}/.well-known/oauth-protected-resource"' in response["WWW-Authenticate"]


# --- bad input never crashes an endpoint -------------------------------------------------------------

@pytest.mark.parametrize("metadata", [
    {"client_name": "agent\x00"},
    {"redirect_uris": ["https://a.example/cb\x00"]},
    {"redirect_uris": ["https://\u0430pple.example/cb"]},  # non-ASCII: percent-encode (RFC 3986)
    {"redirect_uris": ["https://a.example/c b"]},
    {"redirect_uris": ["https://a.example/c\\b"]},
    {"logo_uri": "https://a.example/\x00"},
    {"contacts": ["ops@a.example"], "extra": {"k\x00": 1}},
])
def test_registration_refuses_text_that_cannot_be_stored(anon, metadata):
    body = json.dumps({"redirect_uris": [REDIRECT], **metadata})
    response = anon.post("/oauth/register", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")
    assert not OAuthClient.objects.exists()


@pytest.mark.parametrize("body", [b'{"client_name": "\\ud800", "redirect_uris": ["http://127.0.0.1/cb"]}',
                                  b'{"x": ' + b"[" * 100000 + b"]" * 100000 + b"}"])
def test_registration_refuses_surrogates_and_deep_nesting(anon, body):
    response = anon.post("/oauth/register", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize("data, headers, status, error", [
    ({"grant_type": "authorization_code", "code": "x", "client_id": "awc_\x00"}, {}, 400, "invalid_request"),
    ({"grant_type": "refresh_token", "refresh_token": "awrt_\u00e9", "client_id": "awc_x"}, {}, 400, "invalid_request"),
    ({"grant_type": "authorization_code", "code": "x"},
     {"Authorization": "Basic " + base64.b64encode(b"\xff\xfe:secret").decode()}, 401, "invalid_client"),
    ({"grant_type": "authorization_code", "code": "x"},
     {"Authorization": "Basic " + base64.b64encode(b"awc_x:s\x00").decode()}, 401, "invalid_client"),
])
def test_token_endpoint_refuses_parameters_that_are_not_printable_ascii(anon, data, headers, status, error):
    response = anon.post("/oauth/token", data, headers=headers)
    assert (response.status_code, response.json()["error"]) == (status, error), response.content


def test_revocation_refuses_a_nul_token(anon, tokens):
    response = anon.post("/oauth/revoke", {"token": "awat_\x00", "client_id": tokens["client_id"]})
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"
    assert api(anon, tokens["access_token"]).status_code == 200


@pytest.mark.parametrize("params", [{"client_id": "awc_\x00"}, {"redirect_uri": "http://127.0.0.1:8765/callback\x00"},
                                    {"redirect_uri": "http://127.0.0.1:8765/caf\u00e9"}, {"state": "st\x00te"},
                                    {"resource": f"{BASE}/mcp\x00"}])
def test_authorization_with_unprintable_parameters_is_refused_on_the_page(anon, browser, params):
    params = {"client_id": register(anon)["client_id"], **params}
    url = authorize_url(challenge=pkce()[1], **params)
    for response in (browser.get(url), browser.post(url, {"action": "allow"})):
        assert response.status_code == 400 and "printable ASCII" in response.content.decode()
    assert not OAuthToken.objects.exists()


def test_an_oauth_token_reads_but_never_mints_rotates_or_revokes_api_keys(anon, tokens, org):
    from airweave.tenancy.services import api_key_create

    existing = api_key_create(organization=org).api_key
    auth = {"HTTP_AUTHORIZATION": f"Bearer {tokens['access_token']}"}
    assert anon.get("/api-keys", **auth).status_code == 200
    for response in (anon.post("/api-keys", {}, format="json", **auth),
                     anon.post(f"/api-keys/{existing.id}/rotate", {}, format="json", **auth),
                     anon.delete(f"/api-keys/{existing.id}", **auth)):
        assert response.status_code == 403 and "OAuth access token" in response.json()["detail"]
    existing.refresh_from_db()
    assert existing.revoked_at is None
