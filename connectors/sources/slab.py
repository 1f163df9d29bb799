"""Slab: the posts of a Slab workspace, with their topics as breadcrumbs.

Auth: an organization API token (Slab → Team settings → Developer tools; Business and Enterprise
plans), sent as `Authorization: <token>` with no scheme, as Slab documents; a refused token
(HTTP 401, or a GraphQL `UNAUTHENTICATED` error) marks the connection `needs_reauth`.

API: GraphQL at `https://api.slab.com/v1/graphql`. `organization { host posts { ... } }` lists the
metadata of every post at once (Slab does not page it); the content of the posts that changed is
then read with `posts(ids: [...])`, POSTS_PER_READ at a time. A post's `content` is a Quill Delta
(a JSON list of `insert` operations); its text is the concatenation of the string inserts (embeds
such as images are left out). Archived posts are left out unless `include_archived`.

Entities: SlabPostEntity (`post:{id}`; breadcrumbs: the post's first topic; `web_url`
`https://{host}/posts/{slug}-{id}`, the form Slab's own links take; owner and topics in
`raw_source_fields`).

Incremental: cursor `{"since": {"posts": <newest updatedAt>}}`. Every run lists every post
(metadata only) and reads the content of those updated after the mark; posts the listing no
longer holds (deleted, or archived) are deleted (`present_entity_ids`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._graphql import GraphQLSource
from connectors.sources._saas import ListedSource, Watermarks, compact, parse_time

POSTS_PER_READ = 50
LISTING = """query SlabPosts {
  organization { host posts { id title updatedAt archivedAt } }
}"""
CONTENTS = """query SlabPostContents($ids: [ID!]!) {
  posts(ids: $ids) {
    id title content insertedAt updatedAt publishedAt
    owner { name email }
    topics { id name }
  }
}"""


@dataclass
class SlabPostEntity(BaseEntity):
    """A post: its title (`name`) and the text of its content."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Slab",
    short_name="slab",
    description="Posts of a Slab knowledge base, with their topics as breadcrumbs; changed posts re-read.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_token", "API token", "string", "Team settings → Developer tools → API token.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("include_archived", "Include archived posts", "boolean", default=False),),
    labels=("Knowledge Base", "Documentation"),
    entity_types=(SlabPostEntity,),
    rate_limit_level="connection",
    rate_limit="5/second",
    base_url="https://api.slab.com",
)
class SlabSource(GraphQLSource, ListedSource, BaseSource):
    """Lists every post; reads the changed ones; see the module docstring."""

    GRAPHQL_URL = "/v1/graphql"
    VENDOR = "Slab"

    def http_auth(self):
        return HeaderAuth({"Authorization": self.credentials["api_token"]})

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        since = self._marks.since("posts")
        organization = self.graphql(LISTING, {}).get("organization") or {}
        host = organization.get("host") or "slab.com"
        keep_archived = self.config.get("include_archived", False)
        changed = []
        for post in organization.get("posts") or []:
            if post.get("archivedAt") and not keep_archived:
                continue
            self.present(f"post:{post['id']}")
            self._marks.advance("posts", post.get("updatedAt"))
            if not since or (post.get("updatedAt") or "") > since:
                changed.append(post["id"])
        for start in range(0, len(changed), POSTS_PER_READ):
            for post in self.graphql(CONTENTS, {"ids": changed[start:start + POSTS_PER_READ]}).get("posts") or []:
                yield self._post(post, host)

    def _post(self, post: dict, host: str) -> SlabPostEntity:
        topics = [t for t in post.get("topics") or [] if t.get("id")]
        owner = post.get("owner") or {}
        title = post.get("title") or post["id"]
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
        return SlabPostEntity(
            entity_id=f"post:{post['id']}", name=title, text=delta_text(post.get("content")),
            breadcrumbs=[Breadcrumb(f"topic:{topics[0]['id']}", topics[0].get("name") or "", "SlabTopic")] if topics else [],
            web_url=f"https://{host}/posts/{slug}-{post['id']}" if slug else f"https://{host}/posts/{post['id']}",
            created_at=parse_time(post.get("insertedAt")), updated_at=parse_time(post.get("updatedAt")),
            raw_source_fields=compact({"owner": owner.get("email") or owner.get("name"),
                                       "topics": [t.get("name") for t in topics if t.get("name")],
                                       "published_at": post.get("publishedAt")}))


def delta_text(content) -> str:
    """The text of a Quill Delta (`[{"insert": "..."}, {"insert": {"image": ...}}, ...]`, or its JSON string)."""
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return content
    if isinstance(content, dict):
        content = content.get("ops") or []
    return "".join(op["insert"] for op in content or [] if isinstance(op, dict) and isinstance(op.get("insert"), str))
