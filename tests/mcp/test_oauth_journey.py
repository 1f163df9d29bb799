"""A remote MCP client given only the /mcp URL, against a real daphne server: it discovers the
authorization server, registers, sends the (logged-in) user through the consent page, exchanges
the code, calls the tool, refreshes with rotation, and its revoked, expired or foreign tokens are
refused. The client side is the official SDK's OAuth provider; the user's browser is httpx2
carrying a real Django session cookie."""
from __future__ import annotations

import re
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.test import Client as DjangoClient
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from airweave.collections.services import collection_create
from airweave.tenancy.models import Membership, OAuthClient, OAuthToken as OAuthTokenRow, User
from airweave.tenancy.services import organization_get_or_create
from tests.mcp.test_http import over_http, raw_post

REDIRECT = "http://127.0.0.1:33418/callback"


class ConsentRefused(Exception):
    """The authorization server redirected back with an error instead of a code."""


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


def session_cookie(user) -> dict:
    """A real Django session of `user` (as after logging in), as cookies for another HTTP client."""
    browser = DjangoClient()
    browser.force_login(user)
    return {name: morsel.value for name, morsel in browser.cookies.items()}


class Browser:
    """The user's browser: opens the consent page with their session and answers it."""

    def __init__(self, cookies: dict, organization, answer: str = "allow"):
        self.cookies, self.organization, self.answer = cookies, organization, answer
        self.pages: list[str] = []
        self.location = ""

    async def open(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(cookies=self.cookies, timeout=60) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, page.text
            self.pages.append(page.text)
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            answer = await http.post(authorization_url, data={
                "csrfmiddlewaretoken": token, "action": self.answer, "organization": str(self.organization.pk)})
            assert answer.status_code == 302, answer.text
            self.location = answer.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        params = {k: v[0] for k, v in parse_qs(urlsplit(self.location).query).items()}
        assert self.location.startswith(REDIRECT), self.location
        if "error" in params:
            raise ConsentRefused(params["error"])
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"))


@pytest.fixture
def user(handbook):
    user = User.objects.create_user("grace@example.com", "a long enough password")
    Membership.objects.create(user=user, organization=handbook["org"])
    return user


def oauth_provider(url: str, storage: MemoryStorage, browser: Browser) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url, storage=storage, redirect_handler=browser.open, callback_handler=browser.callback,
        client_metadata=OAuthClientMetadata(client_name="Journey agent", redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code", "refresh_token"]))


def search_leave(client):
    async def calls():
        tools = await client.list_tools()
        return tools, await client.call_tool("search-handbook", {"query": "request annual leave", "tier": "instant",
                                                                 "limit": 2})
    return calls()


def test_the_whole_oauth_journey(handbook, user, live_server_url):
    url = f"{live_server_url}/mcp"
    storage, browser = MemoryStorage(), Browser(session_cookie(user), handbook["org"])
    provider = oauth_provider(url, storage, browser)
    headers = {"X-Collection-Readable-ID": "handbook"}

    # given only the URL: discover → register → authorize as the logged-in user → exchange the
    # code → list the tools → learn the collections → search one
    async def url_only(client):
        tools = await client.list_tools()
        unchosen = await client.call_tool("search", {"query": "request annual leave"})
        chosen = await client.call_tool("search", {"query": "request annual leave", "collection": "handbook",
                                                   "tier": "instant", "limit": 2})
        return tools, unchosen, chosen

    tools, unchosen, result = over_http(url, url_only, auth=provider)
    assert {t.name for t in tools.tools} == {"search", "get-config"}
    assert unchosen.is_error and "- handbook (Staff handbook)" in unchosen.content[0].text
    assert not result.is_error and result.structured_content["results"][0]["name"] == "Requesting leave"
    assert "## 1. Requesting leave" in result.content[0].text and "Link: file://" in result.content[0].text
    assert "Journey agent" in browser.pages[0] and "Staff handbook" in browser.pages[0]
    registered = OAuthClient.objects.get(client_id=storage.client_info.client_id)
    assert registered.client_name == "Journey agent" and registered.redirect_uris == [REDIRECT]
    first = storage.tokens
    assert first.access_token.startswith("awat_") and first.refresh_token.startswith("awrt_")
    row = OAuthTokenRow.objects.get()
    assert (row.user, row.organization, row.resource) == (user, handbook["org"], url)

    # with the collection header, the tool is named after the collection
    tools, result = over_http(url, search_leave, headers=headers, auth=provider)
    assert {t.name for t in tools.tools} == {"search-handbook", "get-config"}
    assert result.structured_content["results"][0]["name"] == "Requesting leave"
    assert len(browser.pages) == 1  # the stored token is reused: no second consent

    # the access token is a credential of the REST API too, for its organization
    api = httpx2.get(f"{live_server_url}/collections", headers={"Authorization": f"Bearer {first.access_token}"})
    assert [c["readable_id"] for c in api.json()] == ["handbook"]

    # refresh: once the access token has expired, the client rotates both tokens by itself
    provider.context.token_expiry_time = time.time() - 1
    config = over_http(url, lambda c: c.call_tool("get-config", {}), headers=headers, auth=provider)
    assert config.structured_content["authentication"] == "oauth"
    assert config.structured_content["user"] == "grace@example.com"
    second = storage.tokens
    assert second.access_token != first.access_token and second.refresh_token != first.refresh_token
    assert len(browser.pages) == 1  # no second consent
    assert raw_post(url, {"Authorization": f"Bearer {first.access_token}"}).status_code == 401

    # revoke: the client's token stops working at once
    info = storage.client_info
    revoked = httpx2.post(f"{live_server_url}/oauth/revoke", data={"token": second.refresh_token},
                          auth=(info.client_id, info.client_secret))
    assert revoked.status_code == 200
    refused = raw_post(url, {"Authorization": f"Bearer {second.access_token}"})
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]


def test_a_denied_consent_gives_no_token(handbook, user, live_server_url):
    storage, browser = MemoryStorage(), Browser(session_cookie(user), handbook["org"], answer="deny")

    async def denied(client):
        return await client.list_tools()

    with pytest.RaisesGroup(pytest.RaisesExc(ConsentRefused, match="access_denied"), flatten_subgroups=True):
        over_http(f"{live_server_url}/mcp", denied, auth=oauth_provider(f"{live_server_url}/mcp", storage, browser))
    assert "error=access_denied" in browser.location and storage.tokens is None
    assert not OAuthTokenRow.objects.exists()


def test_expired_revoked_and_foreign_tokens_are_refused(handbook, user, live_server_url):
    url = f"{live_server_url}/mcp"
    other = organization_get_or_create(name="Other org")
    collection_create(organization=other, name="Other secrets", readable_id="other-secrets")
    storage, browser = MemoryStorage(), Browser(session_cookie(user), handbook["org"])
    over_http(url, lambda c: c.list_tools(), auth=oauth_provider(url, storage, browser))
    bearer = {"Authorization": f"Bearer {storage.tokens.access_token}"}
    assert raw_post(url, bearer).status_code == 200

    # a token of one organization never reaches another's collection, by MCP or by REST
    foreign = over_http(url, lambda c: c.call_tool("search-other-secrets", {"query": "secrets"}),
                        headers={**bearer, "X-Collection-Readable-ID": "other-secrets"})
    assert foreign.is_error and "was not found" in foreign.content[0].text
    assert "other-secrets" not in foreign.content[0].text.split("Your collections")[1]
    assert httpx2.get(f"{live_server_url}/collections/other-secrets", headers=bearer).status_code == 404

    OAuthTokenRow.objects.update(access_expires_at=timezone.now() - timedelta(seconds=1))
    assert raw_post(url, bearer).status_code == 401
    OAuthTokenRow.objects.update(access_expires_at=timezone.now() + timedelta(hours=1), revoked_at=timezone.now())
    assert raw_post(url, bearer).status_code == 401
    OAuthTokenRow.objects.update(revoked_at=None)
    assert raw_post(url, bearer).status_code == 200
    Membership.objects.filter(user=user).delete()  # the user left the organization
    assert raw_post(url, bearer).status_code == 401
