"""Authentication of sources: credential stores, auth objects for the HTTP client, OAuth flows.

- `store`: where a connection's credentials live and how refreshed tokens are persisted.
- `tokens`: the auth objects a source's HTTP client signs requests with (API key, basic,
  OAuth 2 bearer with refresh, OAuth 1).
- `providers`: the deployment's OAuth provider endpoints and scopes (one YAML file).
- `oauth`: token refresh and the browser flows (OAuth 2 with PKCE, OAuth 1).
"""
