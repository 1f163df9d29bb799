"""Ready-to-paste client snippets (cURL, Python SDK, MCP) for a collection and a search request."""
from __future__ import annotations

import json


def search_snippets(*, base_url: str, readable_id: str, body: dict, api_key: str = "$AIRWEAVE_API_KEY",
                    path: str = "search") -> dict[str, str]:
    """{"curl", "python", "mcp"}: the same request as a cURL call, an Airweave Python SDK call and an
    MCP client configuration with the tool call it makes."""
    curl = (f"curl -s -X POST {base_url}/collections/{readable_id}/{path} \\\n"
            f"  -H \"X-API-Key: {api_key}\" -H 'Content-Type: application/json' \\\n"
            f"  -d '{json.dumps(body)}'")
    kwargs = ",\n    ".join(f"{k}={_py(v)}" for k, v in body.items())
    method = {"search": "search", "search/instant": "search", "search/classic": "search",
              "search/agentic": "search"}.get(path, "search")
    python = ("from airweave import AirweaveSDK\n\n"
              f"client = AirweaveSDK(api_key=\"{api_key}\", base_url=\"{base_url}\")\n"
              f"response = client.collections.{method}(\n    readable_id=\"{readable_id}\",\n    {kwargs},\n)\n"
              "for result in response.results:\n    print(result)")
    tool_args = {"query": body.get("query", "")}
    if path.startswith("search/") and path.split("/")[1] in ("instant", "classic", "agentic"):
        tool_args["tier"] = path.split("/")[1]
    for key in ("limit", "retrieval_strategy", "filter"):
        if key in body and body[key] is not None:
            tool_args[key] = body[key]
    mcp = (json.dumps({"mcpServers": {"airweave": {"url": f"{base_url}/mcp", "headers": {
        "X-API-Key": api_key, "X-Collection-Readable-ID": readable_id}}}}, indent=2)
        + "\n\n// tool call\n" + json.dumps({"name": f"search-{readable_id}", "arguments": tool_args}, indent=2))
    return {"curl": curl, "python": python, "mcp": mcp}


def _py(value) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    return json.dumps(value) if isinstance(value, str) else repr(value)
