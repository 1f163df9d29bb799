"""The deployment's OAuth providers: endpoints, scopes and the app's client credentials.

One YAML file (`connectors/auth/oauth_providers.yml`, or the path in the
`AIRWEAVE_OAUTH_PROVIDERS_FILE` setting) maps a source's short name to its provider entry:

    github:
      authorization_url: https://github.com/login/oauth/authorize
      token_url: https://github.com/login/oauth/access_token
      scopes: [repo, read:org]
      client_id_env: AIRWEAVE_GITHUB_CLIENT_ID          # the deployment's own OAuth app
      client_secret_env: AIRWEAVE_GITHUB_CLIENT_SECRET

Fields (all optional but the URLs of the flow used): `oauth_version` (2 | 1), `oauth_type`
("access_only" | "with_refresh" | "with_rotating_refresh" | "oauth1"), `authorization_url`,
`token_url`, `scopes`, `scope_separator` (" "), `pkce` (true when the provider requires it),
`client_auth` ("body": client id/secret in the form; "basic": HTTP basic), `authorize_params`
(extra query parameters, e.g. `access_type: offline`), OAuth 1's `request_token_url` and
`access_token_url`, `client_id_env` / `client_secret_env` (environment variables holding the
deployment's client; absent → every connection brings its own client, BYOC). URLs may name
config fields of the connection in braces, e.g. `https://{subdomain}.zendesk.com/oauth/tokens`.
YAML anchors and merge keys (`<<: *google`) share entries.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from django.conf import settings

DEFAULT_FILE = Path(__file__).with_name("oauth_providers.yml")
_FIELDS = {"oauth_version", "oauth_type", "authorization_url", "token_url", "scopes", "scope_separator", "pkce",
           "client_auth", "authorize_params", "request_token_url", "access_token_url", "client_id_env",
           "client_secret_env", "display_name"}


class ProviderNotConfigured(LookupError):
    """No OAuth provider entry for a source, or the entry lacks what a flow needs."""


@dataclass(frozen=True)
class OAuthProvider:
    """One provider entry of the YAML file (see the module docstring for the fields)."""

    name: str
    oauth_version: int = 2
    oauth_type: str = "with_refresh"
    authorization_url: str = ""
    token_url: str = ""
    scopes: tuple[str, ...] = ()
    scope_separator: str = " "
    pkce: bool = False
    client_auth: str = "body"
    authorize_params: dict = field(default_factory=dict)
    request_token_url: str = ""
    access_token_url: str = ""
    client_id_env: str = ""
    client_secret_env: str = ""
    display_name: str = ""

    def client_credentials(self, credentials: dict | None = None) -> tuple[str, str]:
        """(client_id, client_secret): the connection's own client (BYOC) if it has one, else the deployment's.

        `credentials` is the connection's credentials dict (`client_id`/`client_secret`, or
        OAuth 1's `consumer_key`/`consumer_secret`). Raises ProviderNotConfigured when neither exists.
        """
        credentials = credentials or {}
        client_id = credentials.get("client_id") or credentials.get("consumer_key") or ""
        client_secret = credentials.get("client_secret") or credentials.get("consumer_secret") or ""
        if not client_id:
            client_id = os.environ.get(self.client_id_env, "") if self.client_id_env else ""
            client_secret = os.environ.get(self.client_secret_env, "") if self.client_secret_env else ""
        if not client_id:
            where = f" (set {self.client_id_env} and {self.client_secret_env})" if self.client_id_env else ""
            raise ProviderNotConfigured(f"no OAuth client for '{self.name}': bring your own client_id and "
                                        f"client_secret{where}")
        return client_id, client_secret

    @property
    def has_deployment_client(self) -> bool:
        return bool(self.client_id_env and os.environ.get(self.client_id_env))

    def url(self, name: str, config: dict | None = None) -> str:
        """The endpoint `name` ("token_url", ...) with `{field}` placeholders filled from `config`.

        Raises ProviderNotConfigured when the endpoint is missing or a placeholder has no value.
        """
        template = getattr(self, name)
        if not template:
            raise ProviderNotConfigured(f"OAuth provider '{self.name}' has no {name}")
        try:
            return template.format_map({k: str(v).strip("/") for k, v in (config or {}).items()})
        except KeyError as exc:
            raise ProviderNotConfigured(f"OAuth provider '{self.name}' needs config field {exc} for its {name}") from None


def providers_file() -> Path:
    return Path(getattr(settings, "AIRWEAVE_OAUTH_PROVIDERS_FILE", "") or DEFAULT_FILE)


@lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> dict[str, OAuthProvider]:
    raw = yaml.safe_load(Path(path).read_text()) or {}
    out = {}
    for name, entry in raw.items():
        if name.startswith("_") or not isinstance(entry, dict):  # `_google: &google` anchors
            continue
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"{path}: provider '{name}' has unknown field(s) {sorted(unknown)}")
        values = dict(entry)
        values["scopes"] = tuple(values.get("scopes") or ())
        out[name] = OAuthProvider(name=name, **values)
    return out


def all_providers() -> dict[str, OAuthProvider]:
    """Every provider entry of the deployment's file, by source short name."""
    path = providers_file()
    return _load(str(path), path.stat().st_mtime)


def get_provider(short_name: str) -> OAuthProvider:
    """The provider entry of source `short_name`. Raises ProviderNotConfigured."""
    try:
        return all_providers()[short_name]
    except KeyError:
        raise ProviderNotConfigured(f"no OAuth provider configured for source '{short_name}' in "
                                    f"{providers_file()}") from None
