"""MediaWiki: the pages of a MediaWiki wiki (Wikipedia, Fandom, an intranet wiki), as wikitext.

Config: `api_url` (the wiki's `api.php`, e.g. `https://www.mediawiki.org/w/api.php`;
SSRF-guarded), `namespaces` (namespace numbers, default `[0]`, the articles). Auth: none for a
public wiki, or the access token of an owner-only OAuth 2 consumer (Special:OAuthConsumerRegistration),
sent as `Authorization: Bearer <token>`. An API error `mwoauth-invalid-authorization`,
`readapidenied` or `assertuserfailed` marks the connection `needs_reauth`.

API (the Action API, `format=json&formatversion=2`, paged by the `continue` object it returns):
- every run, the page ids: `list=allpages&apnamespace=<ns>&aplimit=max` (500 titles a request);
- a first run, the contents: `generator=allpages&gapnamespace=<ns>&gaplimit=50` with
  `prop=revisions|info&rvprop=ids|timestamp|content&rvslots=main&inprop=url`;
- later runs, what changed: `list=recentchanges&rcstart=<mark>&rcdir=newer&rcnamespace=<ns>
  &rctype=edit|new|log&rcprop=title|ids|timestamp&rclimit=500`, then the contents of those pages
  by `pageids=` (50 at a time).
Wikimedia's 429 (with Retry-After) and 5xx are the shared client's to wait out.

Entities: MediaWikiPageEntity (`page:{pageid}`, so a moved page keeps its id; name: the title;
text: the current revision's wikitext; breadcrumbs: the parent pages of a subpage title
`A/B/C`; `web_url`: the page's `fullurl`; revision id and namespace in `raw_source_fields`).

Incremental: cursor `{"since": {"changes": <the wiki's time (meta=siteinfo) when the run began>}}`. Recent changes
(edits, creations, moves) name the pages to read again; the page-id listing of every run is
complete, so deleted pages are those it no longer holds (`present_entity_ids`). MediaWiki keeps
recent changes for 90 days by default (`$wgRCMaxAge`): a mark older than 30 days → full listing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator
from urllib.parse import urlsplit

from connectors.auth.tokens import Auth, BearerAuth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http.ssrf import BlockedAddress, check_url
from connectors.registry import source
from connectors.sources._saas import Watermarks, parse_time

CONTENT_BATCH = 50
MAX_MARK_AGE_DAYS = 30
AUTH_ERRORS = {"mwoauth-invalid-authorization", "mwoauth-invalid-authorization-invalid-user", "readapidenied",
               "assertuserfailed", "assertbotfailed"}
PAGE_PROPS = {"prop": "revisions|info", "rvprop": "ids|timestamp|content", "rvslots": "main", "inprop": "url"}


@dataclass
class MediaWikiPageEntity(BaseEntity):
    """A wiki page: its title (`name`) and the wikitext of its current revision."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="MediaWiki",
    short_name="mediawiki",
    description="Pages of a MediaWiki wiki (Wikipedia, Fandom, intranet wikis), kept fresh through recent changes.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "An owner-only OAuth 2 consumer's access "
                             "token, for wikis that need a login to read.", is_secret=True),),
    config_fields=(
        ConfigField("api_url", "API URL", "string", "The wiki's api.php, e.g. https://www.mediawiki.org/w/api.php",
                    required=True),
        ConfigField("namespaces", "Namespaces", "array", "Namespace numbers (0: articles).", items_type="integer",
                    default=[0]),
    ),
    labels=("Knowledge Base",),
    entity_types=(MediaWikiPageEntity,),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class MediaWikiSource(BaseSource):
    """Lists page ids every run, reads new and changed pages; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        url = out["api_url"].strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname or not parts.path.endswith("api.php"):
            raise ValueError("config field 'api_url' must be the wiki's api.php URL, e.g. "
                             "https://www.mediawiki.org/w/api.php")
        try:
            check_url(url)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'api_url': {exc}") from None
        namespaces = out.get("namespaces") or [0]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in namespaces):
            raise ValueError("config field 'namespaces' must be namespace numbers (0 for articles)")
        out.update(api_url=url.split("?")[0], namespaces=namespaces)
        return out

    def http_auth(self):
        token = self.credentials.get("access_token")
        return BearerAuth(token) if token else Auth()

    def _query(self, params: dict) -> Iterator[dict]:
        """Every answer of one Action API query, following `continue`."""
        follow: dict = {}
        while True:
            body = self.http.get_json(self.config["api_url"], params={
                "action": "query", "format": "json", "formatversion": "2", **params, **follow})
            error = body.get("error")
            if error:
                code = error.get("code", "")
                if code in AUTH_ERRORS:
                    failure = AuthFailure(f"the wiki refused the access token: {code}", "invalid_credentials")
                    if self.http.on_auth_failure:
                        self.http.on_auth_failure(failure)
                    raise failure
                raise SourceError(f"MediaWiki API error {code}: {error.get('info', '')}", "source_error")
            yield body.get("query") or {}
            follow = body.get("continue") or {}
            if not follow:
                return

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        since = self._marks.since("changes")
        if since and (parse_time(since) is None or
                      time.time() - parse_time(since).timestamp() > MAX_MARK_AGE_DAYS * 86400):
            self._marks.previous, self._marks.incremental, since = {}, False, None
        namespaces = "|".join(str(n) for n in self.config.get("namespaces") or [0])
        self._present: set[str] = set()
        for ns in self.config.get("namespaces") or [0]:
            for answer in self._query({"list": "allpages", "apnamespace": ns, "aplimit": "max"}):
                self._present.update(f"page:{p['pageid']}" for p in answer.get("allpages") or [])
        # The wiki's own clock, read before the listing: the next run asks for changes from then on.
        general = next(self._query({"meta": "siteinfo", "siprop": "general"})).get("general") or {}
        self._marks.set("changes", general.get("time") or _now())
        if not since:
            for ns in self.config.get("namespaces") or [0]:
                for answer in self._query({"generator": "allpages", "gapnamespace": ns, "gaplimit": CONTENT_BATCH,
                                           **PAGE_PROPS}):
                    yield from self._pages(answer)
            return
        changed: list[int] = []
        for answer in self._query({"list": "recentchanges", "rcstart": since, "rcdir": "newer",
                                   "rcnamespace": namespaces, "rctype": "edit|new|log",
                                   "rcprop": "title|ids|timestamp", "rclimit": "500"}):
            for change in answer.get("recentchanges") or []:
                if change.get("pageid") and change["pageid"] not in changed:
                    changed.append(change["pageid"])
        for start in range(0, len(changed), CONTENT_BATCH):
            ids = "|".join(str(i) for i in changed[start:start + CONTENT_BATCH])
            for answer in self._query({"pageids": ids, **PAGE_PROPS}):
                yield from self._pages(answer)

    def _pages(self, answer: dict) -> Iterator[MediaWikiPageEntity]:
        for page in answer.get("pages") or []:
            if page.get("missing") or not page.get("revisions"):
                continue
            revision = page["revisions"][0]
            content = ((revision.get("slots") or {}).get("main") or {}).get("content", "")
            title = page["title"]
            parts = title.split("/")
            crumbs = [Breadcrumb(f"title:{'/'.join(parts[:i])}", "/".join(parts[:i]), "page")
                      for i in range(1, len(parts))] if page.get("ns", 0) != 0 or len(parts) > 1 else []
            yield MediaWikiPageEntity(
                entity_id=f"page:{page['pageid']}", name=title, text=content, breadcrumbs=crumbs,
                updated_at=parse_time(revision.get("timestamp")), web_url=page.get("fullurl") or "",
                raw_source_fields={"namespace": page.get("ns"), "revision_id": revision.get("revid"),
                                   "content_model": page.get("contentmodel")})

    def is_full_listing(self) -> bool:
        return not self._marks.incremental

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return self._marks.cursor()


def _now() -> str:
    """Now, as the ISO 8601 UTC timestamp MediaWiki takes for `rcstart`."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
