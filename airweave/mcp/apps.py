from django.apps import AppConfig


class MCPConfig(AppConfig):
    name = "airweave.mcp"
    label = "airweave_mcp"  # "mcp" is the SDK's package name
    verbose_name = "MCP server"
