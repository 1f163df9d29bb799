"""What the Freshworks sources share (Freshdesk, Freshservice): the account's subdomain, the API
key sent as HTTP basic auth `<api key>:X` (as Freshworks documents), and listings paged by the
`Link: <...>; rel="next"` header whose JSON is a list or, in Freshservice, `{"<key>": [...]}`.
"""
from __future__ import annotations

from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.sources._saas import SubdomainSource


class FreshworksSource(SubdomainSource):
    """A Freshworks product at `https://<domain>.<SUBDOMAIN_OF>`, read with the agent's `api_key`."""

    SUBDOMAIN_FIELD = "domain"

    def http_auth(self):
        return BasicAuth(self.credentials["api_key"], "X")

    def listing(self, path: str, params: dict, key: str | None = None) -> Iterator[dict]:
        """Every item of a Link-paged listing; `key` names the list inside a wrapped answer."""
        for response in self.http.paginate(path, params=params):
            body = response.json()
            yield from (body.get(key) or []) if key else body
