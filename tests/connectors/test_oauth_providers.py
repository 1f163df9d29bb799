"""The deployment's OAuth providers file: the bundled entries, merge keys, templated hosts, overrides."""
from __future__ import annotations

import pytest

from connectors.auth.providers import ProviderNotConfigured, all_providers, get_provider
from tests.connectors.saas_helpers import write_providers


def test_the_bundled_file_has_complete_entries():
    providers = all_providers()
    assert {"github", "notion", "slack", "gmail", "jira", "confluence", "trello", "airtable"} <= set(providers)
    for p in providers.values():
        if p.oauth_version == 1:
            assert p.request_token_url and p.authorization_url and p.access_token_url, p.name
        else:
            assert p.authorization_url.startswith("https://") and p.token_url.startswith("https://"), p.name
    assert get_provider("gmail").pkce and get_provider("gmail").authorize_params["access_type"] == "offline"
    assert get_provider("airtable").pkce and get_provider("airtable").client_auth == "basic"
    assert get_provider("jira").oauth_type == "with_rotating_refresh"
    assert not any(name.startswith("_") for name in providers)  # anchors are not providers


def test_templated_urls_take_the_connection_config():
    zendesk = get_provider("zendesk")
    assert zendesk.url("token_url", {"subdomain": "acme"}) == "https://acme.zendesk.com/oauth/tokens"
    with pytest.raises(ProviderNotConfigured, match="subdomain"):
        zendesk.url("token_url", {})


def test_client_credentials_prefer_the_connections_own_client(monkeypatch):
    github = get_provider("github")
    assert github.client_credentials({"client_id": "mine", "client_secret": "s"}) == ("mine", "s")
    monkeypatch.setenv("AIRWEAVE_OAUTH_GITHUB_CLIENT_ID", "deploy")
    monkeypatch.setenv("AIRWEAVE_OAUTH_GITHUB_CLIENT_SECRET", "deploy-secret")
    assert github.client_credentials({}) == ("deploy", "deploy-secret")
    monkeypatch.delenv("AIRWEAVE_OAUTH_GITHUB_CLIENT_ID")
    with pytest.raises(ProviderNotConfigured, match="AIRWEAVE_OAUTH_GITHUB_CLIENT_ID"):
        github.client_credentials({})


def test_the_file_is_overridable_and_checked(settings, tmp_path):
    settings.AIRWEAVE_OAUTH_PROVIDERS_FILE = write_providers(tmp_path / "p.yml", {
        "acme": {"authorization_url": "https://acme.example/a", "token_url": "https://acme.example/t"}})
    assert set(all_providers()) == {"acme"}
    with pytest.raises(ProviderNotConfigured, match="no OAuth provider configured for source 'github'"):
        get_provider("github")
    settings.AIRWEAVE_OAUTH_PROVIDERS_FILE = write_providers(tmp_path / "bad.yml", {"acme": {"tokn_url": "x"}})
    with pytest.raises(ValueError, match="unknown field"):
        all_providers()
