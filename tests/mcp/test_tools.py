"""The MCP tools in process (the official client against the server object): names and schemas,
cited Markdown and structured results for every tier, and tool errors for bad input."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from mcp import Client

from airweave.collections.services import collection_create
from airweave.mcp.backends import InProcessBackend
from airweave.mcp.tools import build_server
from airweave.tenancy.services import organization_get_or_create


def session(server, calls):
    """Run `calls(client)` (an async function) against `server` with the official client; its result."""

    async def run():
        async with Client(server) as client:
            return await calls(client)

    return async_to_sync(run)()


def server_for(org, collection="handbook"):
    return build_server(backend=InProcessBackend(organization=org), collection=collection, transport="stdio")


def test_tools_are_listed_with_their_input_schema(handbook):
    tools = session(server_for(handbook["org"]), lambda c: c.list_tools()).tools
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"search-handbook", "get-config"}
    schema = by_name["search-handbook"].input_schema
    assert schema["required"] == ["query"]
    props = schema["properties"]
    assert set(props) == {"query", "tier", "retrieval_strategy", "limit", "offset", "thinking", "filter"}
    assert (props["query"]["minLength"], props["query"]["maxLength"]) == (1, 1000)
    assert props["tier"]["enum"] == ["instant", "classic", "agentic"] and props["tier"]["default"] == "classic"
    assert (props["limit"]["minimum"], props["limit"]["maximum"], props["limit"]["default"]) == (1, 1000, 100)
    assert by_name["search-handbook"].annotations.read_only_hint is True
    assert by_name["search-handbook"].output_schema["properties"]["results"]["type"] == "array"


@pytest.mark.parametrize("tier", ["instant", "classic", "agentic"])
def test_search_answers_cited_markdown_and_structured_results(handbook, tier):
    result = session(server_for(handbook["org"]), lambda c: c.call_tool(
        "search-handbook", {"query": "How do I request annual leave?", "tier": tier, "limit": 2}))
    assert not result.is_error, result.content
    text = result.content[0].text
    assert text.startswith("# Search results from collection `handbook`")
    assert f"Tier: {tier} · 2 results" in text
    first = text.split("## 1. ")[1].split("## 2. ")[0]
    assert first.startswith("Requesting leave")
    assert "Score: " in first and "Source: local_files" in first and "Path: hr" in first
    assert "Link: file://" in first and first.rstrip().endswith("approves the request in HR Links.")
    structured = result.structured_content
    assert (structured["collection"], structured["tier"], structured["count"]) == ("handbook", tier, 2)
    top = structured["results"][0]
    assert top["name"] == "Requesting leave" and top["airweave_system_metadata"]["original_entity_id"] == "hr/leave.md"


def test_instant_strategy_offset_and_filter_reach_the_search(handbook):
    server = server_for(handbook["org"])

    async def calls(client):
        everything = await client.call_tool("search-handbook", {"query": "laptop", "tier": "instant",
                                                                "retrieval_strategy": "keyword", "limit": 10})
        second_page = await client.call_tool("search-handbook", {"query": "laptop", "tier": "instant", "limit": 1,
                                                                 "offset": 1, "retrieval_strategy": "semantic"})
        filtered = await client.call_tool("search-handbook", {"query": "request", "tier": "instant", "filter": [
            {"conditions": [{"field": "breadcrumbs.name", "operator": "equals", "value": "it"}]}]})
        return everything, second_page, filtered

    everything, second_page, filtered = session(server, calls)
    assert [r["name"] for r in everything.structured_content["results"]] == ["Laptops"]  # keyword: one match
    assert second_page.structured_content["offset"] == 1 and "## 2. " in second_page.content[0].text
    assert {r["name"] for r in filtered.structured_content["results"]} == {"Laptops"}


@pytest.mark.parametrize("arguments, field", [
    ({"query": ""}, "query"),
    ({"query": "x" * 1001}, "query"),
    ({"query": "leave", "tier": "psychic"}, "tier"),
    ({"query": "leave", "limit": 0}, "limit"),
    ({"query": "leave", "limit": 1001}, "limit"),
    ({"query": "leave", "offset": -1}, "offset"),
    ({"query": "leave", "retrieval_strategy": "vibes"}, "retrieval_strategy"),
    ({"query": "leave", "filter": [{"conditions": [{"field": "name", "operator": "like", "value": "x"}]}]}, "filter"),
    ({"query": "leave", "filter": "not a list"}, "filter"),
    ({}, "query"),
])
def test_invalid_input_answers_a_validation_error(handbook, arguments, field):
    result = session(server_for(handbook["org"]), lambda c: c.call_tool("search-handbook", arguments))
    assert result.is_error
    assert "validation error" in result.content[0].text and field in result.content[0].text


def test_bad_filter_field_and_blank_query_answer_what_to_fix(handbook):
    server = server_for(handbook["org"])

    async def calls(client):
        return (await client.call_tool("search-handbook", {"query": "leave", "tier": "instant", "filter": [
                    {"conditions": [{"field": "colour", "operator": "equals", "value": "red"}]}]}),
                await client.call_tool("search-handbook", {"query": "   "}))

    bad_field, blank = session(server, calls)
    assert bad_field.is_error and "filter.0.conditions.0" in bad_field.content[0].text
    assert "A valid filter looks like" in bad_field.content[0].text
    assert blank.is_error and "query must not be empty" in blank.content[0].text


def test_unknown_collection_and_no_collection_list_the_callers_collections(handbook):
    org = handbook["org"]
    for i in range(30):
        collection_create(organization=org, name=f"Extra collection {i}", readable_id=f"extra-{i:02d}")
    collection_create(organization=organization_get_or_create(name="Someone else"), name="Secret stuff",
                      readable_id="secret-stuff")

    unknown = session(server_for(org, "secret-stuff"), lambda c: c.call_tool("search-secret-stuff", {"query": "x"}))
    assert unknown.is_error and "Collection 'secret-stuff' was not found" in unknown.content[0].text
    assert "- handbook (Staff handbook)" in unknown.content[0].text

    unconfigured = server_for(org, None)

    async def calls(client):
        tools = await client.list_tools()
        return tools, await client.call_tool("search", {"query": "leave"}), await client.call_tool(
            "search", {"query": "leave", "collection": "handbook", "limit": 1})

    tools, missing, chosen = session(unconfigured, calls)
    assert {t.name for t in tools.tools} == {"search", "get-config"}
    assert missing.is_error and "No collection is selected" in missing.content[0].text
    listed = [line for line in missing.content[0].text.splitlines() if line.startswith("- ")]
    assert len(listed) == 25 and listed[0] == "- handbook (Staff handbook)"
    assert "secret" not in missing.content[0].text
    assert not chosen.is_error and chosen.structured_content["results"][0]["name"] == "Requesting leave"


def test_get_config_describes_the_server(handbook):
    result = session(server_for(handbook["org"]), lambda c: c.call_tool("get-config", {}))
    config = result.structured_content
    assert config["collection"] == "handbook" and config["search_tool"] == "search-handbook"
    assert config["organization"] == "Handbook org" and config["mode"] == "in-process"
    assert config["transport"] == "stdio" and config["tiers"] == ["instant", "classic", "agentic"]
    assert '"collection": "handbook"' in result.content[0].text


@pytest.mark.parametrize("tier", ["instant", "classic", "agentic"])
def test_a_nul_in_the_query_answers_what_to_fix(handbook, tier):
    result = session(server_for(handbook["org"]), lambda c: c.call_tool(
        "search-handbook", {"query": "leave\x00", "tier": tier}))
    assert result.is_error and "query must not contain NUL" in result.content[0].text


def test_the_monthly_search_quota_answers_its_message(handbook, settings):
    settings.AIRWEAVE_QUOTA_SEARCHES_PER_MONTH = 1
    server = server_for(handbook["org"])

    async def calls(client):
        return [await client.call_tool("search-handbook", {"query": "leave", "tier": "instant"}) for _ in range(2)]

    first, second = session(server, calls)
    assert not first.is_error
    assert second.is_error and "Quota exceeded" in second.content[0].text
    assert "AIRWEAVE_QUOTA_SEARCHES_PER_MONTH" in second.content[0].text


def test_searches_count_against_the_organizations_search_rate(handbook, settings, counting_cache):
    settings.AIRWEAVE_SEARCH_RATE_LIMIT = "2/day"
    server = server_for(handbook["org"])

    async def calls(client):
        return [await client.call_tool("search-handbook", {"query": "leave", "tier": "instant"}) for _ in range(3)]

    results = session(server, calls)
    assert [r.is_error for r in results] == [False, False, True]
    assert "Rate limit exceeded" in results[2].content[0].text
    assert "AIRWEAVE_SEARCH_RATE_LIMIT" in results[2].content[0].text


def test_a_long_lived_server_stops_when_its_key_is_revoked(handbook):
    """stdio keeps one backend for the life of the process: its key is checked on every call."""
    from airweave.tenancy.context import actor_for_credential
    from airweave.tenancy.models import APIKey
    from airweave.tenancy.services import api_key_revoke

    actor = actor_for_credential(handbook["key"])
    backend = InProcessBackend(organization=handbook["org"], actor=actor, credential=handbook["key"])
    server = build_server(backend=backend, collection="handbook", transport="stdio")

    async def search(client):
        return await client.call_tool("search-handbook", {"query": "leave", "tier": "instant", "limit": 1})

    assert not session(server, search).is_error
    api_key_revoke(api_key=APIKey.objects.get(pk=actor.api_key.pk))
    refused = session(server, search)
    assert refused.is_error and "AIRWEAVE_API_KEY is no longer valid" in refused.content[0].text
