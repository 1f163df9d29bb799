"""GitHub search (federated): issues and pull requests found by GitHub's own search at query time.

An opt-in alternative to the synced `github` source, for repositories too large or too busy to
copy: nothing is synced; each search of a collection that holds a `github_search` connection
asks `GET /search/issues?q=<query> repo:<owner/name> ...` and the FederatedSearch operation
merges the answers into the collection's results by reciprocal rank fusion. A separate short
name (rather than a flag on `github`) because FederatedSearch decides by the source's declared
`federated_search` capability, and because a connection that both synced and searched the same
repositories would answer every issue twice.

Config and auth are `github`'s: `repositories` (owner/name), a personal access token or OAuth.
GitHub search allows 30 requests a minute per token (the rate limit is per connection) and a
query of at most 256 characters without its qualifiers (longer queries are cut at a word).
A failing GitHub (an error status, a refused token, a timeout) raises, and the search goes on
without it: partial results, and the failure named in the `federated_search_done` event.

Results have the shape of the pipeline endpoint's results: `entity_id` "owner/name#123" (the id
the synced source gives the same issue), `name`, `textual_representation`, `breadcrumbs` (the
repository), `web_url`, `created_at`, `updated_at`, `system_metadata`, `source_fields`.
"""
from __future__ import annotations

from typing import Iterator

from connectors.base import BaseEntity
from connectors.registry import source
from connectors.sources.github import GitHubIssueEntity, GitHubSource

MAX_QUERY_CHARS = 256
MAX_BODY_CHARS = 4000


def _query_text(query: str) -> str:
    """The user's words, quotes balanced, cut at a word to GitHub's 256-character limit."""
    text = " ".join(query.split())
    if text.count('"') % 2:
        text = text.replace('"', "")
    if len(text) > MAX_QUERY_CHARS:
        text = text[:MAX_QUERY_CHARS].rsplit(" ", 1)[0]
    return text


@source(
    name="GitHub search",
    short_name="github_search",
    description="Issues and pull requests of GitHub repositories, searched on GitHub at query time (nothing is "
                "synced).",
    auth_methods=GitHubSource.auth_methods,
    oauth_type="access_only",
    auth_fields=GitHubSource.auth_fields,
    config_fields=GitHubSource.config_fields[:1],
    labels=("Code", "Ticketing"),
    entity_types=(),
    federated_search=True,
    rate_limit_level="connection",
    rate_limit="30/minute",
    base_url="https://api.github.com",
)
class GitHubSearchSource(GitHubSource):
    """Answers searches with GitHub's issue search; see the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        return iter(())  # federated: nothing to sync

    def is_full_listing(self) -> bool:
        return True

    def next_cursor(self) -> dict:
        return {}

    def search(self, query: str, limit: int) -> list[dict]:
        """Up to `limit` (at most 100) issues and pull requests matching `query`, best first.

        Raises HttpError, RateLimited, NetworkError or AuthFailure (connectors.http) when GitHub fails.
        """
        text = _query_text(query)
        if not text:
            return []
        qualifiers = " ".join(f"repo:{repository}" for repository in self.config["repositories"])
        body = self.http.get_json("/search/issues", params={"q": f"{text} {qualifiers}",
                                                            "per_page": max(1, min(limit, 100))})
        return [self._result(item) for item in (body.get("items") or [])[:limit]]

    def _result(self, item: dict) -> dict:
        repository = item.get("repository_url", "").split("/repos/", 1)[-1]
        entity = self._issue(repository, item)
        entity.body = entity.body[:MAX_BODY_CHARS]
        return {
            "id": entity.entity_id,
            "entity_id": entity.entity_id,
            "name": entity.name,
            "textual_representation": entity.textual_representation(),
            "breadcrumbs": [b.as_dict() for b in entity.breadcrumbs],
            "created_at": entity.created_at.isoformat() if entity.created_at else None,
            "updated_at": entity.updated_at.isoformat() if entity.updated_at else None,
            "web_url": entity.web_url,
            "url": entity.url or None,
            "system_metadata": {"source_name": self.short_name, "entity_type": GitHubIssueEntity.entity_type(),
                                "original_entity_id": entity.entity_id, "federated": True},
            "source_fields": {**entity.raw_source_fields, "github_score": item.get("score")},
        }
