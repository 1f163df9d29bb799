"""Discourse: the categories and topics (with their posts) of a Discourse forum.

Auth: an API key (Admin → API → New API key, read scopes) with the username it acts as, sent as
`Api-Key` and `Api-Username` headers, as Discourse documents. The forum's `site_url` is
user-supplied (SSRF-guarded: a private host is refused at creation unless allowed). What the
acting user can read is indexed (a `system` key reads private categories too), and the
entities are visible to the whole organization.

API (Discourse's REST API, JSON): `GET /categories.json?include_subcategories=true` (every
category, subcategories nested), `GET /latest.json?order=activity&page=N` (topics by last
activity, newest first; 30 a page, paged by `page` while `topic_list.more_topics_url` is
set), `GET /t/{id}.json` (a topic with its first 20 posts and `post_stream.stream`, every post
id) and `GET /t/{id}/posts.json?post_ids[]=...` (the rest, 20 at a time). Rate limits (429 with
Retry-After, 60 requests a minute per API key by default) are the shared client's; a key or
username Discourse refuses (403 `invalid_access` on the categories, which any key may read, or
401) marks the connection `needs_reauth`.

Entities: DiscourseCategoryEntity (`category:{id}`), DiscourseTopicEntity (`topic:{id}`: the
title, tags and every post in order, as text from the posts' `cooked` HTML; breadcrumbs: parent
category, category; `web_url` `<site>/t/<slug>/<id>`). Posts live inside their topic, so a
deleted topic takes its posts with it and an edited post re-indexes its topic.

Incremental: cursor `{"since": {"topics": <newest bumped_at>}, "full_at": <epoch>}`. An
incremental run walks `latest.json` only down to topics bumped at or before the mark and
re-reads those; a topic that answers 404 (deleted, or moved out of reach) is reported deleted.
Discourse has no deletion feed, so every `full_sync_days` (default 7) a run lists every topic
and category again (a full listing: absent ones are deleted). Edits that do not bump a topic
(an edit of an old post) wait for that full run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator
from urllib.parse import urlsplit

from connectors.auth.tokens import HeaderAuth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, html_text, parse_time

POSTS_PER_REQUEST = 20


@dataclass
class DiscourseCategoryEntity(BaseEntity):
    """A category: its name and description."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nDiscourse category\n\n{self.description}".strip()


@dataclass
class DiscourseTopicEntity(BaseEntity):
    """A topic and its posts, in order ("author: text" each)."""

    tags: list[str] = field(default_factory=list)
    posts: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        tags = f"tags: {', '.join(self.tags)}\n\n" if self.tags else ""
        return f"# {self.name}\n\n{tags}" + "\n\n".join(self.posts)


@source(
    name="Discourse",
    short_name="discourse",
    description="Categories and topics, with every post, of a Discourse forum.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("api_key", "API key", "string", "An API key (Admin → API).", required=True, is_secret=True),
        ConfigField("api_username", "API username", "string", "The user the key acts as (e.g. system).",
                    required=True),
    ),
    config_fields=(
        ConfigField("site_url", "Forum URL", "string", "e.g. https://forum.example.org", required=True),
        ConfigField("categories", "Categories", "array", "Category slugs to index (default: every category).",
                    items_type="string"),
        ConfigField("full_sync_days", "Days between full listings", "integer", "Deleted topics are found by a "
                    "full listing this often.", default=7),
    ),
    labels=("Community", "Knowledge Base"),
    entity_types=(DiscourseCategoryEntity, DiscourseTopicEntity),
    rate_limit_level="connection",
    rate_limit="60/minute",
)
class DiscourseSource(WatermarkSource, BaseSource):
    """Reads categories, the latest topics and their posts; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = out["site_url"].strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
            raise ValueError("config field 'site_url' must be the forum's http(s) URL, e.g. https://forum.example.org")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'site_url': {exc}") from None
        if not 1 <= out["full_sync_days"] <= 365:
            raise ValueError("config field 'full_sync_days' must be between 1 and 365")
        out["site_url"] = url
        return out

    @property
    def base_url(self) -> str:
        return self.config["site_url"]

    def http_auth(self):
        return HeaderAuth({"Api-Key": self.credentials["api_key"], "Api-Username": self.credentials["api_username"]})

    def http_headers(self) -> dict:
        return {"Accept": "application/json"}

    # --- listing ------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        self._full_at = self._marks.expire(cursor, self.config.get("full_sync_days", 7), time.time())
        self._categories: dict[int, dict] = {}
        wanted = set(self.config.get("categories") or [])
        for category in self._all_categories():
            self._categories[category["id"]] = category
        for category in self._categories.values():
            if wanted and category.get("slug") not in wanted:
                continue
            yield DiscourseCategoryEntity(
                entity_id=f"category:{category['id']}", name=category["name"], breadcrumbs=self._crumbs(category, False),
                description=category.get("description_text") or "",
                web_url=f"{self.base_url}/c/{category.get('slug')}/{category['id']}",
                raw_source_fields={"slug": category.get("slug"), "topic_count": category.get("topic_count")})

        since = self._marks.since("topics")
        for topic in self._latest(since):
            self._marks.advance("topics", topic.get("bumped_at"))
            category = self._categories.get(topic.get("category_id"))
            if wanted and (category is None or category.get("slug") not in wanted):
                continue
            entity = self._topic(topic, category)
            if entity is not None:
                yield entity

    def _all_categories(self) -> Iterator[dict]:
        try:
            body = self.http.get_json("/categories.json", params={"include_subcategories": "true"})
        except HttpError as exc:
            # Any valid key may read the categories: Discourse answers a bad key or username 403 invalid_access.
            if exc.status == 403:
                failure = AuthFailure("Discourse refused the API key or username (invalid_access)",
                                      "invalid_credentials")
                if self.http.on_auth_failure:
                    self.http.on_auth_failure(failure)
                raise failure from None
            raise
        for category in (body.get("category_list") or {}).get("categories") or []:
            yield category
            for child in category.get("subcategory_list") or []:
                yield {**child, "parent_category_id": child.get("parent_category_id") or category["id"]}

    def _latest(self, since: str | None) -> Iterator[dict]:
        page = 0
        while True:
            body = self.http.get_json("/latest.json", params={"order": "activity", "page": page})
            listing = body.get("topic_list") or {}
            for topic in listing.get("topics") or []:
                if since and (topic.get("bumped_at") or "") <= since:
                    if not topic.get("pinned"):  # pinned topics head the list whatever their activity
                        return
                    continue
                yield topic
            if not listing.get("more_topics_url") or not listing.get("topics"):
                return
            page += 1

    def _crumbs(self, category: dict | None, include_self: bool = True) -> list[Breadcrumb]:
        crumbs = []
        if category and category.get("parent_category_id") in self._categories:
            parent = self._categories[category["parent_category_id"]]
            crumbs.append(Breadcrumb(f"category:{parent['id']}", parent["name"], "DiscourseCategoryEntity"))
        if category and include_self:
            crumbs.append(Breadcrumb(f"category:{category['id']}", category["name"], "DiscourseCategoryEntity"))
        return crumbs

    def _topic(self, summary: dict, category: dict | None) -> DiscourseTopicEntity | None:
        topic_id = summary["id"]
        try:
            topic = self.http.get_json(f"/t/{topic_id}.json")
        except HttpError as exc:
            if exc.status in (403, 404, 410):  # deleted, or no longer readable by the API user
                self._marks.delete(f"topic:{topic_id}")
                return None
            raise
        stream = topic.get("post_stream") or {}
        posts = list(stream.get("posts") or [])
        have = {p["id"] for p in posts}
        missing = [pid for pid in stream.get("stream") or [] if pid not in have]
        for start in range(0, len(missing), POSTS_PER_REQUEST):
            chunk = missing[start:start + POSTS_PER_REQUEST]
            more = self.http.get_json(f"/t/{topic_id}/posts.json", params={"post_ids[]": chunk})
            posts += (more.get("post_stream") or {}).get("posts") or []
        posts.sort(key=lambda p: p.get("post_number") or 0)
        texts = [f"{p.get('name') or p.get('username')}: {html_text(p.get('cooked'))}" for p in posts]
        tags = [t if isinstance(t, str) else t.get("name", "") for t in topic.get("tags") or []]
        return DiscourseTopicEntity(
            entity_id=f"topic:{topic_id}", name=topic.get("title") or summary.get("title") or str(topic_id),
            breadcrumbs=self._crumbs(category), tags=tags, posts=texts,
            created_at=parse_time(topic.get("created_at")),
            updated_at=parse_time(topic.get("last_posted_at") or summary.get("bumped_at")),
            web_url=f"{self.base_url}/t/{topic.get('slug') or summary.get('slug')}/{topic_id}",
            raw_source_fields={"category": category.get("name") if category else None, "tags": tags,
                               "posts_count": topic.get("posts_count"), "views": topic.get("views"),
                               "closed": topic.get("closed"), "archived": topic.get("archived")})

    def next_cursor(self) -> dict:
        return {**self._marks.cursor(), "full_at": self._full_at}
