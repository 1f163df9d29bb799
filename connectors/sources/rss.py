"""RSS and Atom feeds: the items of one or more feeds (blogs, changelogs, status pages, news).

Config: `feed_urls` (RSS 0.9x/1.0/2.0, Atom 0.3/1.0, parsed by `feedparser`), `max_pages`
(RFC 5005 paged feeds: `<link rel="next">` followed up to this many pages per feed), and
`mirror` (the feed lists every item it has, so an item gone from it is deleted; leave it off for
the usual feeds that show only the latest items). Auth: none, or HTTP basic auth for a private
feed (`username` + `password`); a refused password (401) marks the connection `needs_reauth`.
Feed URLs are user-supplied: private and loopback hosts are refused at creation (422) unless
AIRWEAVE_ALLOW_PRIVATE_HOSTS allows them. Requests go through the shared HTTP client (retries,
429 with Retry-After, a per-connection rate limit, the SSRF guard).

Entities: FeedItemEntity, `entity_id` = `<feed key>:<item id>` (the feed key: 12 hex digits of
the SHA-256 of the feed URL; the item id: its `guid`/`id`, else its link, else its title and
date); name = the title; text = the full content (HTML as text), else the summary; `web_url` =
the item's link; breadcrumb: the feed (its title); author, categories and enclosure URLs in
`raw_source_fields`; `created_at` / `updated_at` from published / updated.

Incremental: cursor `{"feeds": {<feed key>: {"etag", "modified", "newest"}}}`. Each feed is
fetched with `If-None-Match` / `If-Modified-Since`: a 304 lists nothing and keeps its items.
Paged feeds stop at the first page with no item newer than `newest`. A run is never a full
listing (a feed shows a window of its items): deletions are the items of feeds removed from
the config or answering 410 Gone (`present_entity_ids`), and with `mirror`, the items a feed's
complete listing no longer holds.
"""
from __future__ import annotations

import calendar
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterator
from urllib.parse import urljoin, urlsplit

from connectors.auth.tokens import Auth, BasicAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._saas import html_text, iso


def feed_key(url: str) -> str:
    """The stable 12-hex-digit key of a feed URL (the prefix of its items' entity ids)."""
    return hashlib.sha256(url.encode()).hexdigest()[:12]


@dataclass
class FeedItemEntity(BaseEntity):
    """One item (RSS `<item>`, Atom `<entry>`): title, author, categories and its text."""

    author: str = ""
    categories: list[str] = field(default_factory=list)
    content: str = ""

    def textual_representation(self) -> str:
        meta = [m for m in (f"by {self.author}" if self.author else "",
                            f"categories: {', '.join(self.categories)}" if self.categories else "") if m]
        return "\n\n".join(p for p in (f"# {self.name}", "; ".join(meta), self.content) if p)


def _when(parsed) -> datetime | None:
    """A feedparser `*_parsed` time.struct_time (UTC) as an aware datetime."""
    if not parsed:
        return None
    return datetime.fromtimestamp(calendar.timegm(parsed), tz=timezone.utc)


class _ConfiguredFeeds:
    """`entity_id in present`: the item belongs to a feed still configured and not gone."""

    def __init__(self, keys: set[str]):
        self.keys = keys

    def __contains__(self, entity_id: str) -> bool:
        return entity_id.split(":", 1)[0] in self.keys


@source(
    name="RSS / Atom feeds",
    short_name="rss",
    description="Items of RSS and Atom feeds (blogs, changelogs, status pages, news), fetched conditionally.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("username", "Username", "string", "For a feed behind HTTP basic auth only."),
        ConfigField("password", "Password", "string", is_secret=True),
    ),
    config_fields=(
        ConfigField("feed_urls", "Feed URLs", "array", "RSS or Atom feed URLs.", required=True, items_type="string"),
        ConfigField("max_pages", "Pages per feed", "integer", "RFC 5005 paged feeds: next pages followed, at most.",
                    default=10),
        ConfigField("mirror", "Feeds list every item", "boolean", "Delete items a feed no longer lists (only for "
                    "feeds that list all their items).", default=False),
    ),
    labels=("Web", "News"),
    entity_types=(FeedItemEntity,),
    rate_limit_level="connection",
    rate_limit="2/second",
)
class RssSource(BaseSource):
    """Fetches each feed (conditionally) and its next pages; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        urls = [u.strip() for u in out["feed_urls"] if u.strip()]
        if not urls:
            raise ValueError("config field 'feed_urls' must hold at least one feed URL")
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"config field 'feed_urls': {url!r} is not an http(s) URL")
            try:
                check_url(url)
            except BlockedAddress as exc:
                raise ValueError(f"config field 'feed_urls': {exc}") from None
        if len(set(urls)) != len(urls):
            raise ValueError("config field 'feed_urls' lists a feed twice")
        if not 1 <= out["max_pages"] <= 1000:
            raise ValueError("config field 'max_pages' must be between 1 and 1000")
        out["feed_urls"] = urls
        return out

    def http_auth(self):
        if self.credentials.get("username"):
            return BasicAuth(self.credentials["username"], self.credentials.get("password") or "")
        return Auth()

    def http_headers(self) -> dict:
        return {"Accept": "application/atom+xml, application/rss+xml, application/rdf+xml;q=0.9, "
                          "application/xml;q=0.8, text/xml;q=0.8, */*;q=0.1"}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = (cursor or {}).get("feeds") or {}
        self._feeds: dict[str, dict] = {}
        self._gone: set[str] = set()
        self._deleted: list[str] = []
        for url in self.config["feed_urls"]:
            yield from self._feed(url, previous.get(feed_key(url)) or {})

    def _feed(self, url: str, state: dict) -> Iterator[BaseEntity]:
        import feedparser

        key = feed_key(url)
        self._feeds[key] = dict(state)
        headers = {}
        if state.get("etag"):
            headers["If-None-Match"] = state["etag"]
        if state.get("modified"):
            headers["If-Modified-Since"] = state["modified"]
        newest, seen, page_url, pages = state.get("newest"), [], url, 0
        while page_url and pages < self.config.get("max_pages", 10):
            try:
                response = self.http.get(page_url, headers=headers if pages == 0 else None)
            except HttpError as exc:
                if exc.status == 410 and pages == 0:  # the publisher removed the feed for good
                    self._gone.add(key)
                    return
                raise
            if response.status_code == 304:
                return
            parsed = feedparser.parse(response.content, response_headers={k.lower(): v for k, v in
                                                                           response.headers.items()})
            if not parsed.version and not parsed.entries:
                raise SourceError(f"{page_url} is not an RSS or Atom feed ({parsed.get('bozo_exception', '')})",
                                  "config_error")
            if pages == 0:
                self._feeds[key].update(etag=response.headers.get("ETag"),
                                        modified=response.headers.get("Last-Modified"))
            title = parsed.feed.get("title") or url
            fresh = False
            for item in parsed.entries:
                entity = self._item(key, url, title, item)
                seen.append(entity.entity_id)
                stamp = iso(entity.updated_at or entity.created_at)
                if stamp and (state.get("newest") is None or stamp > state["newest"]):
                    fresh = True
                if stamp and (newest is None or stamp > newest):
                    newest = stamp
                yield entity
            pages += 1
            following = next((link.get("href") for link in parsed.feed.get("links", []) if link.get("rel") == "next"),
                             None)
            page_url = urljoin(page_url, following) if following and (fresh or not state.get("newest")) else None
        self._feeds[key]["newest"] = newest
        if self.config.get("mirror") and not page_url:
            self._deleted += [i for i in state.get("ids", []) if i not in set(seen)]
            self._feeds[key]["ids"] = seen

    def _item(self, key: str, url: str, title: str, item) -> FeedItemEntity:
        contents = item.get("content") or []
        body = contents[0].get("value", "") if contents else item.get("summary", "")
        published, updated = _when(item.get("published_parsed")), _when(item.get("updated_parsed"))
        ident = item.get("id") or item.get("link") or f"{item.get('title', '')}@{iso(published or updated)}"
        categories = [t.get("term") for t in item.get("tags") or [] if t.get("term")]
        return FeedItemEntity(
            entity_id=f"{key}:{ident}", name=item.get("title") or ident, content=html_text(body),
            author=item.get("author") or "", categories=categories,
            breadcrumbs=[Breadcrumb(key, title, "feed")], created_at=published, updated_at=updated or published,
            web_url=item.get("link") or "",
            raw_source_fields={"feed_url": url, "feed_title": title, "author": item.get("author"),
                               "categories": categories,
                               "enclosures": [e.get("href") for e in item.get("enclosures") or [] if e.get("href")]})

    def is_full_listing(self) -> bool:
        return False

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def present_entity_ids(self):
        return _ConfiguredFeeds(set(self._feeds) - self._gone)

    def next_cursor(self) -> dict:
        return {"feeds": {k: v for k, v in self._feeds.items() if k not in self._gone}}
