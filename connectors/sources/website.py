"""Website: the pages of one site, crawled from a start URL or a sitemap.

Config: `start_url` (a page, or a sitemap / sitemap index: XML is detected by content),
`max_depth` (links followed from the start page or the sitemap's pages, default 3),
`max_pages` (pages fetched per run, default 500), `include_paths` / `exclude_paths` (URL path
prefixes), `respect_robots_txt` (default true).

Rules:
- Same site only: the start URL's host, with or without `www.`, over http or https. Links
  elsewhere, and redirects that leave the site, are not followed.
- robots.txt (RFC 9309, via urllib.robotparser) is read first with the user agent
  `AirweaveBot`: disallowed pages are not fetched, `Crawl-delay` is honoured (at most 10 s). A
  robots.txt answering 4xx allows everything; one answering 5xx (or unreachable) fails the
  job rather than deleting pages. `<meta name="robots">` `noindex` keeps a page out of the
  index, `nofollow` keeps its links out of the crawl; `rel="nofollow"` links are skipped.
- Every request goes through the source HTTP client: the SSRF guard refuses private,
  loopback and link-local hosts (so a crawl of a local server needs AIRWEAVE_ALLOW_PRIVATE_HOSTS),
  timeouts and retries apply, and a per-connection rate limit keeps the crawl polite.
- Only HTML pages (text/html, application/xhtml+xml) are indexed, read up to
  AIRWEAVE_MAX_FILE_BYTES; their text comes from the HTML converter (connectors.converters).

Entities: `entity_id` = the page's normalised URL (after redirects: no fragment, lower-case
scheme and host, no default port); `name` = the <title> (else the first <h1>, else the URL);
one Breadcrumb for the site; `web_url` = the URL; `raw_source_fields` = url, depth,
description, language. Each run crawls the site again; unchanged pages are kept by the
pipeline's content hash (the text, not the HTML). A crawl stopped by `max_pages`, or with
pages that failed to load (5xx, timeouts), is partial: nothing is deleted then. Pages that
answer 404 or 410, or that are no longer linked, are deleted.
"""
from __future__ import annotations

import logging
import urllib.robotparser
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from bs4 import BeautifulSoup
from django.conf import settings
from lxml import etree

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, SourceError
from connectors.converters import convert_bytes
from connectors.http import BlockedAddress, HttpError, NetworkError
from connectors.http.ssrf import check_url
from connectors.registry import source

logger = logging.getLogger(__name__)

ROBOTS_AGENT = "AirweaveBot"
USER_AGENT = "AirweaveBot/0.1 (website source)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_CRAWL_DELAY = 10.0
MAX_SITEMAPS = 50
MAX_REDIRECTS = 10


@dataclass
class WebPageEntity(BaseEntity):
    """One HTML page of the site; `text` is its visible text (converted when crawled)."""

    text: str = ""

    # Last-Modified changes on every request of many dynamic sites; the text decides.
    volatile_fields = ("updated_at",)

    def textual_representation(self) -> str:
        return self.text


def normalize_url(url: str) -> str:
    """`url` without fragment, with lower-case scheme and host, no default port, "/" for an empty path."""
    url, _ = urldefrag(url.strip())
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _site(host: str) -> str:
    host = (host or "").lower()
    return host[4:] if host.startswith("www.") else host


@source(
    name="Website",
    short_name="website",
    description="The pages of a website, crawled from a start URL or a sitemap (same site, robots.txt respected).",
    auth_methods=("direct",),
    labels=("Web",),
    entity_types=(WebPageEntity,),
    rate_limit_level="connection",
    rate_limit="5/second",
    config_fields=(
        ConfigField("start_url", "Start URL", "string", "A page of the site, or its sitemap (XML).", required=True),
        ConfigField("max_depth", "Maximum depth", "integer", "Links followed from the start page (0: that page "
                    "only, or only the sitemap's pages).", default=3),
        ConfigField("max_pages", "Maximum pages", "integer", "Pages fetched per sync.", default=500),
        ConfigField("include_paths", "Include paths", "array", "Only URLs whose path starts with one of these "
                    "(e.g. /docs/).", items_type="string"),
        ConfigField("exclude_paths", "Exclude paths", "array", "Skip URLs whose path starts with one of these.",
                    items_type="string", default=[]),
        ConfigField("respect_robots_txt", "Respect robots.txt", "boolean", "Obey the site's robots.txt.",
                    default=True),
    ),
)
class WebsiteSource(BaseSource):
    """Crawls the site breadth-first; see the module docstring for the rules."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = out["start_url"].strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("config field 'start_url' must be an http(s) URL with a host, e.g. https://example.com/docs")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'start_url': {exc}") from None
        out["start_url"] = normalize_url(url)
        for name, low, high in (("max_depth", 0, 50), ("max_pages", 1, 100_000)):
            if not low <= out[name] <= high:
                raise ValueError(f"config field '{name}' must be between {low} and {high}")
        return out

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._partial = False

    def http_headers(self) -> dict:
        return {"User-Agent": USER_AGENT}

    # --- the crawl ----------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[WebPageEntity]:
        start = self.config["start_url"]
        self._site = _site(urlsplit(start).hostname)
        robots = self._robots(start) if self.config.get("respect_robots_txt", True) else None
        delay = min(float((robots.crawl_delay(ROBOTS_AGENT) if robots else None) or 0), MAX_CRAWL_DELAY)
        max_depth, max_pages = self.config.get("max_depth", 3), self.config.get("max_pages", 500)

        queue: deque[tuple[str, int]] = deque([(start, 0)])
        queued = {start}
        fetched = 0
        while queue:
            url, depth = queue.popleft()
            if fetched >= max_pages:
                self._partial = True  # more pages than the cap: deletions would be guesses
                break
            if robots is not None and not robots.can_fetch(ROBOTS_AGENT, url):
                continue
            if fetched and delay:
                self.http.sleep(delay)
            fetched += 1
            page = self._fetch(url)
            if page is None:
                continue
            final_url, content_type, body = page
            if content_type == "sitemap":
                for loc in self._sitemap_urls(body, final_url):
                    if loc not in queued:
                        queued.add(loc)
                        queue.append((loc, depth))
                continue
            entity, links = self._page(final_url, body, depth)
            if entity is not None:
                yield entity
            if depth < max_depth:
                for link in links:
                    if link not in queued:
                        queued.add(link)
                        queue.append((link, depth + 1))

    def is_full_listing(self) -> bool:
        return not self._partial

    def _in_scope(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or _site(parts.hostname) != self._site:
            return False
        path = parts.path or "/"
        include = self.config.get("include_paths") or []
        if include and not any(path.startswith(p) for p in include):
            return False
        return not any(path.startswith(p) for p in self.config.get("exclude_paths") or [])

    def _robots(self, start: str) -> urllib.robotparser.RobotFileParser | None:
        parts = urlsplit(start)
        robots_url = urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))
        parser = urllib.robotparser.RobotFileParser(robots_url)
        try:
            response = self.http.get(robots_url, raise_for_status=False)
        except NetworkError as exc:
            raise SourceError(f"robots.txt of {parts.netloc} is unreachable ({exc}); not crawling", "robots_unavailable")
        if response.status_code >= 500:
            raise SourceError(f"robots.txt of {parts.netloc} answered HTTP {response.status_code}; not crawling "
                              f"(RFC 9309: assume everything is disallowed)", "robots_unavailable")
        if response.status_code >= 400:
            return None  # no robots.txt: everything allowed
        parser.parse(response.text.splitlines())
        return parser

    def _fetch(self, url: str) -> tuple[str, str, bytes] | None:
        """GET a page: (final URL, "html" | "sitemap", body) or None (gone, off-site, not HTML, failed)."""
        max_bytes = settings.AIRWEAVE_MAX_FILE_BYTES
        final_url = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = self.http.get(final_url, stream=True, allow_redirects=False)
            except HttpError as exc:
                if exc.status not in (404, 410, 401, 403):
                    self._partial = True  # a server error: the page may still exist
                logger.info("website: %s answered %s", final_url, exc.status)
                return None
            except (NetworkError, BlockedAddress) as exc:
                self._partial = True
                logger.info("website: %s failed: %s", final_url, exc)
                return None
            if not response.is_redirect:
                break
            response.close()
            target = normalize_url(urljoin(final_url, response.headers.get("Location", "")))
            if not self._in_scope(target):
                return None  # redirected off the site (or out of the included paths): not followed
            final_url = target
        else:
            logger.info("website: %s redirects more than %d times", url, MAX_REDIRECTS)
            return None
        with response:
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            is_html = content_type in HTML_TYPES
            is_xml = content_type in ("application/xml", "text/xml") or final_url.endswith(".xml")
            if not (is_html or is_xml):
                return None
            body = bytearray()
            for block in response.iter_content(1 << 16):
                body += block
                if len(body) > max_bytes:
                    logger.info("website: %s is over %s bytes, skipped", url, max_bytes)
                    return None
        head = bytes(body[:4096])
        if is_xml and (b"<urlset" in head or b"<sitemapindex" in head):
            return final_url, "sitemap", bytes(body)
        return (final_url, "html", bytes(body)) if is_html else None

    def _sitemap_urls(self, body: bytes, sitemap_url: str) -> list[str]:
        """Page URLs of a sitemap; a sitemap index's sitemaps are read too (up to MAX_SITEMAPS)."""
        parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
        pending, seen, pages = [(sitemap_url, body)], set(), []
        while pending and len(seen) < MAX_SITEMAPS:
            url, data = pending.pop()
            seen.add(url)
            try:
                root = etree.fromstring(data, parser)
            except etree.XMLSyntaxError:
                continue
            locs = [normalize_url(e.text) for e in root.iter("{*}loc") if e.text]
            if etree.QName(root).localname == "sitemapindex":
                for loc in locs:
                    if loc not in seen and self._in_scope(loc):
                        fetched = self._fetch(loc)
                        if fetched and fetched[1] == "sitemap":
                            pending.append((loc, fetched[2]))
            else:
                pages.extend(loc for loc in locs if self._in_scope(loc))
        return pages

    def _page(self, url: str, body: bytes, depth: int) -> tuple[WebPageEntity | None, list[str]]:
        soup = BeautifulSoup(body, "lxml")
        robots_meta = " ".join(m.get("content", "") for m in soup.find_all("meta", attrs={"name": "robots"})).lower()
        links = []
        if "nofollow" not in robots_meta:
            base = soup.find("base", href=True)
            base_url = urljoin(url, base["href"]) if base else url
            for a in soup.find_all("a", href=True):
                if "nofollow" in (a.get("rel") or []):
                    continue
                href = a["href"].strip()
                if not href or href.startswith(("mailto:", "javascript:", "tel:", "#")):
                    continue
                link = normalize_url(urljoin(base_url, href))
                if self._in_scope(link):
                    links.append(link)
        if "noindex" in robots_meta:
            return None, links
        try:
            document = convert_bytes(body, Path("page.html"), max_bytes=settings.AIRWEAVE_MAX_FILE_BYTES)
        except SkipEntity as exc:
            logger.info("website: %s has no text (%s)", url, exc.reason)
            return None, links
        description = soup.find("meta", attrs={"name": "description"})
        html = soup.find("html")
        entity = WebPageEntity(
            entity_id=url, name=document.title or url, text=document.text, web_url=url, url=url,
            breadcrumbs=[Breadcrumb(self._site, self._site, "WebSite")],
            raw_source_fields={"url": url, "depth": depth,
                               "description": (description.get("content") or "").strip() if description else "",
                               "language": (html.get("lang") or "") if html else ""},
        )
        return entity, links
