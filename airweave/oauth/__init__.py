"""The OAuth 2.1 authorization server: users log in here and grant an agent access to one of their
organizations, so MCP and API clients need no third-party identity service."""
