"""/mcp over streamable HTTP against a real daphne server, with the official client: API keys in
X-API-Key or Authorization: Bearer, the collection header, 401 with resource metadata, and
DNS-rebinding protection."""
from __future__ import annotations

import re

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create, organization_get_or_create
from tests.mcp.conftest import run_async

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def over_http(url: str, calls, headers: dict | None = None, auth=None):
    """Connect the official client to `url` over streamable HTTP and run `calls(client)`; its result."""

    async def run():
        async with httpx2.AsyncClient(headers=headers or {}, auth=auth, timeout=120) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await calls(client)

    return run_async(run)


def raw_post(url: str, headers: dict) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=60)


def test_lists_tools_and_searches_with_an_api_key(handbook, live_server_url):
    async def calls(client):
        tools = await client.list_tools()
        instant = await client.call_tool("search-handbook", {"query": "request annual leave", "tier": "instant",
                                                             "limit": 3})
        classic = await client.call_tool("search-handbook", {"query": "What if I lose my laptop?", "limit": 3})
        return tools, instant, classic

    tools, instant, classic = over_http(f"{live_server_url}/mcp", calls, headers={
        "X-API-Key": handbook["key"], "X-Collection-Readable-ID": "handbook"})
    assert {t.name for t in tools.tools} == {"search-handbook", "get-config"}
    assert not instant.is_error and instant.structured_content["results"][0]["name"] == "Requesting leave"
    assert "## 1. Requesting leave" in instant.content[0].text
    assert classic.structured_content["results"][0]["name"] == "Laptops"
    assert "Link: file://" in classic.content[0].text


def test_bearer_api_key_and_the_collection_query_parameter(handbook, live_server_url):
    async def calls(client):
        return (await client.list_tools(), await client.call_tool("get-config", {}),
                await client.call_tool("search-handbook", {"query": "receipts", "limit": 1, "tier": "instant"}))

    tools, config, result = over_http(f"{live_server_url}/mcp?collection=handbook", calls,
                                      headers={"Authorization": f"Bearer {handbook['key']}"})
    assert "search-handbook" in {t.name for t in tools.tools}
    assert config.structured_content["transport"] == "streamable-http"
    assert config.structured_content["organization"] == "Handbook org"
    assert config.structured_content["authentication"] == "api_key"
    assert result.structured_content["results"][0]["name"] == "Travel"


def test_invalid_input_over_http_is_a_tool_error(handbook, live_server_url):
    result = over_http(f"{live_server_url}/mcp", lambda c: c.call_tool("search-handbook", {"query": "x", "limit": 5000}),
                       headers={"X-API-Key": handbook["key"], "X-Collection-Readable-ID": "handbook"})
    assert result.is_error and "limit" in result.content[0].text


def test_no_credential_answers_401_pointing_at_the_resource_metadata(live_server_url, transactional_db):
    response = raw_post(f"{live_server_url}/mcp", {})
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
    assert metadata_url == f"{live_server_url}/.well-known/oauth-protected-resource/mcp"
    metadata = httpx2.get(metadata_url).json()
    assert metadata["resource"] == f"{live_server_url}/mcp"
    assert metadata["authorization_servers"] == [live_server_url]
    issuer = httpx2.get(f"{live_server_url}/.well-known/oauth-authorization-server").json()["issuer"]
    assert issuer == live_server_url


@pytest.mark.parametrize("headers", [{"X-API-Key": "aw_dead_beef"}, {"Authorization": "Bearer awat_nope"},
                                     {"Authorization": "Bearer garbage"}])
def test_a_bad_credential_answers_401_invalid_token(live_server_url, transactional_db, headers):
    response = raw_post(f"{live_server_url}/mcp", headers)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert "resource_metadata=" in response.headers["www-authenticate"]


def test_dns_rebinding_protection(handbook, live_server_url):
    key = {"X-API-Key": handbook["key"]}
    assert raw_post(f"{live_server_url}/mcp", {**key, "Host": "evil.example"}).status_code == 421
    assert raw_post(f"{live_server_url}/mcp", {**key, "Origin": "http://evil.example"}).status_code == 403
    assert raw_post(f"{live_server_url}/mcp", {**key, "Origin": "http://localhost:6274"}).status_code == 200
    assert raw_post(f"{live_server_url}/mcp", {"Host": "evil.example"}).status_code == 421  # before authentication


def test_a_key_of_another_organization_never_reaches_the_collection(handbook, live_server_url):
    intruder = organization_get_or_create(name="Intruder org")
    collection_create(organization=intruder, name="Intruder notes", readable_id="intruder-notes")
    key = api_key_create(organization=intruder).key
    result = over_http(f"{live_server_url}/mcp", lambda c: c.call_tool("search-handbook", {"query": "leave"}),
                       headers={"X-API-Key": key, "X-Collection-Readable-ID": "handbook"})
    text = result.content[0].text
    assert result.is_error and "Collection 'handbook' was not found" in text
    assert "- intruder-notes (Intruder notes)" in text and "Staff handbook" not in text


def test_a_malformed_collection_header_answers_400(handbook, live_server_url):
    response = raw_post(f"{live_server_url}/mcp", {"X-API-Key": handbook["key"],
                                                   "X-Collection-Readable-ID": "Not A Readable Id!"})
    assert response.status_code == 400 and "X-Collection-Readable-ID" in response.json()["detail"]


def test_get_and_delete_answer_405_instead_of_hanging(handbook, live_server_url):
    headers = {"X-API-Key": handbook["key"], "Accept": "application/json, text/event-stream"}
    for method in ("GET", "DELETE"):
        response = httpx2.request(method, f"{live_server_url}/mcp", headers=headers, timeout=30)
        assert response.status_code == 405 and response.headers["allow"] == "POST"
        assert "POST" in response.json()["detail"]
    # without a credential, GET still answers the 401 that starts OAuth discovery
    anonymous = httpx2.get(f"{live_server_url}/mcp", headers={"Accept": "text/event-stream"}, timeout=30)
    assert anonymous.status_code == 401 and "resource_metadata=" in anonymous.headers["www-authenticate"]


def test_mcp_requests_share_the_organizations_request_budget(handbook, settings, counting_cache):
    """In process (the settings of this test apply): /mcp answers 429 past AIRWEAVE_RATE_LIMIT,
    counted with the REST API's requests of the organization."""
    from airweave.asgi import http_app

    settings.AIRWEAVE_RATE_LIMIT = "3/day"
    headers = {**MCP_HEADERS, "X-API-Key": handbook["key"], "Host": "127.0.0.1"}

    async def calls():
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=http_app), base_url="http://127.0.0.1",
                                      timeout=60) as client:
            rest = await client.get("/collections", headers={"X-API-Key": handbook["key"]})
            return rest, [await client.post("/mcp", json=INITIALIZE, headers=headers) for _ in range(3)]

    rest, answers = run_async(calls)
    assert rest.status_code == 200
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert int(answers[2].headers["retry-after"]) > 0 and answers[2].headers["ratelimit-remaining"] == "0"
    assert "Rate limit exceeded" in answers[2].json()["detail"]
