"""`manage.py mcp_server` over stdio with the official client, as a desktop client starts it:
searching this installation in-process, and a remote server through AIRWEAVE_BASE_URL."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.conftest import run_async
from tests.processes import subprocess_env


def over_stdio(env: dict, calls):
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_server"], env=env,
                                   cwd=str(settings.BASE_DIR))

    async def run():
        async with Client(params, read_timeout_seconds=120) as client:
            return await calls(client)

    return run_async(run)


async def list_and_search(client):
    tools = await client.list_tools()
    result = await client.call_tool("search-handbook", {"query": "How do I request annual leave?", "limit": 2})
    config = await client.call_tool("get-config", {})
    return tools, result, config


def test_stdio_in_process(handbook):
    tools, result, config = over_stdio(subprocess_env(AIRWEAVE_API_KEY=handbook["key"],
                                                      AIRWEAVE_COLLECTION="handbook"), list_and_search)
    assert {t.name for t in tools.tools} == {"search-handbook", "get-config"}
    assert not result.is_error and result.structured_content["results"][0]["name"] == "Requesting leave"
    assert result.content[0].text.startswith("# Search results from collection `handbook`")
    assert config.structured_content["mode"] == "in-process" and config.structured_content["transport"] == "stdio"


def test_stdio_against_a_remote_server(handbook, live_server_url):
    env = subprocess_env(AIRWEAVE_API_KEY=handbook["key"], AIRWEAVE_COLLECTION="handbook",
                         AIRWEAVE_BASE_URL=live_server_url)
    tools, result, config = over_stdio(env, list_and_search)
    assert "search-handbook" in {t.name for t in tools.tools}
    assert result.structured_content["results"][0]["name"] == "Requesting leave"
    assert config.structured_content["mode"] == "remote" and config.structured_content["base_url"] == live_server_url
    assert handbook["key"] not in config.content[0].text  # the key is masked

    bad = over_stdio({**env, "AIRWEAVE_API_KEY": "aw_dead_beef"},
                     lambda c: c.call_tool("search-handbook", {"query": "leave"}))
    assert bad.is_error and "refused the API key" in bad.content[0].text


def test_stdio_without_a_valid_key_exits_with_a_message(transactional_db):
    done = subprocess.run([sys.executable, "manage.py", "mcp_server"], cwd=settings.BASE_DIR, capture_output=True,
                          text=True, env=subprocess_env(AIRWEAVE_API_KEY="aw_dead_beef"), timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "AIRWEAVE_API_KEY" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("env, message", [({}, "Set AIRWEAVE_API_KEY"),
                                          ({"AIRWEAVE_COLLECTION": "Not An Id"}, "AIRWEAVE_COLLECTION")])
def test_stdio_refuses_a_missing_key_or_a_malformed_collection(api_key, monkeypatch, env, message):
    monkeypatch.delenv("AIRWEAVE_API_KEY", raising=False)
    if env:
        monkeypatch.setenv("AIRWEAVE_API_KEY", api_key)
    with pytest.raises(CommandError, match=message):
        call_command("mcp_server", collection=env.get("AIRWEAVE_COLLECTION", ""))
