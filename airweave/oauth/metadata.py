"""Identifiers of this server as OAuth sees it: its public base URL and where resource metadata lives.

Shared by the OAuth views, `/mcp` and the REST API's 401 answers (pure functions of settings).
"""
from __future__ import annotations

from django.conf import settings

MCP_PATH = "/mcp"


def public_base_url(scheme: str, host: str) -> str:
    """The server's public base URL (issuer and resource identifiers): AIRWEAVE_PUBLIC_URL when set,
    else `scheme://host` of the request."""
    return (settings.AIRWEAVE_PUBLIC_URL or f"{scheme}://{host}").rstrip("/")


def protected_resource_metadata_url(base: str, resource_path: str = "") -> str:
    """Where RFC 9728 metadata of the resource at `base + resource_path` lives."""
    return f"{base}/.well-known/oauth-protected-resource{resource_path}"
