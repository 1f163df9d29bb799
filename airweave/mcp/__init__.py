"""The MCP server: the `search-{collection}` and `get-config` tools over stdio (`manage.py
mcp_server`) and streamable HTTP (`/mcp`, see asgi.py). A face: tools call the search services."""
