"""Canvas LMS: the pages, assignments and announcements of the courses a user takes or teaches.

Config: `base_url` (the institution's Canvas, e.g. `https://canvas.instructure.com` or
`https://school.instructure.com`; SSRF-guarded), `courses` (course ids; default every active
enrollment), `content` (`pages`, `assignments`, `announcements`; default all three). Auth: an
access token (Account → Settings → New access token), sent as `Authorization: Bearer <token>`; a
refused token (401 "Invalid access token.") marks the connection `needs_reauth`.

API (`/api/v1`, every listing paged by the `Link: <...>; rel="next"` header, `per_page=100`):
`GET /courses?enrollment_state=active`, `GET /courses/{id}/pages?sort=updated_at&order=desc`
(titles and dates only) and `GET /courses/{id}/pages/{url}` (one page's HTML `body`),
`GET /courses/{id}/assignments`, `GET /courses/{id}/discussion_topics?only_announcements=true`.
Canvas throttles with a 403 "Rate Limit Exceeded" and `X-Rate-Limit-Remaining` at 0 (429 on newer
instances), which the shared client waits out with backoff.

Entities: CanvasPageEntity (`page:{course}:{page_id}`), CanvasAssignmentEntity
(`assignment:{course}:{id}`: the description, due date, points), CanvasAnnouncementEntity
(`announcement:{course}:{id}`: the message, author); breadcrumb: the course; `web_url` each
item's `html_url`. Unpublished pages and assignments are left out.

Incremental: cursor `{"since": {<course id>: <newest page updated_at>}}`. Every run lists every
course's pages (without bodies), assignments and announcements; only pages updated after their
course's mark are read again; what the listings no longer hold is deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import ListedSource, SelfHostedSource, Watermarks, compact, html_text, parse_time

CONTENT = ("pages", "assignments", "announcements")


@dataclass
class CanvasPageEntity(BaseEntity):
    """A course page: its title (`name`) and text."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@dataclass
class CanvasAssignmentEntity(CanvasPageEntity):
    """An assignment: its name, description, due date and points."""

    details: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.text) if p)


@dataclass
class CanvasAnnouncementEntity(CanvasAssignmentEntity):
    """An announcement: its title, author and message."""


@source(
    name="Canvas LMS",
    short_name="canvas",
    description="Pages, assignments and announcements of Canvas LMS courses.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "Account → Settings → New access token.",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("base_url", "Canvas URL", "string", "e.g. https://school.instructure.com", required=True),
        ConfigField("courses", "Courses", "array", "Course ids (default: every active enrollment).",
                    items_type="string", default=[]),
        ConfigField("content", "What to index", "array", ", ".join(CONTENT), items_type="string",
                    default=list(CONTENT)),
    ),
    labels=("Education",),
    entity_types=(CanvasPageEntity, CanvasAssignmentEntity, CanvasAnnouncementEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class CanvasSource(ListedSource, SelfHostedSource):
    """Lists each course's content; reads changed pages; see the module docstring."""

    URL_MUST_BE = "the institution's Canvas URL, e.g. https://school.instructure.com"

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        unknown = [c for c in out["content"] if c not in CONTENT]
        if unknown or not out["content"]:
            raise ValueError(f"config field 'content' takes any of {', '.join(CONTENT)}")
        return out

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"])

    def _list(self, path: str, **params) -> Iterator[dict]:
        for response in self.http.paginate(f"/api/v1{path}", params={**params, "per_page": 100}):
            yield from response.json()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        chosen = {str(c) for c in self.config.get("courses") or []}
        for course in self._list("/courses", enrollment_state="active"):
            if (chosen and str(course["id"]) not in chosen) or course.get("access_restricted_by_date"):
                continue
            crumb = Breadcrumb(f"course:{course['id']}", course.get("name") or str(course["id"]), "CanvasCourse")
            content = self.config.get("content") or CONTENT
            if "pages" in content:
                yield from self._pages(course, crumb)
            if "assignments" in content:
                yield from self._assignments(course, crumb)
            if "announcements" in content:
                yield from self._announcements(course, crumb)

    def _pages(self, course: dict, crumb: Breadcrumb) -> Iterator[BaseEntity]:
        cid = str(course["id"])
        since = self._marks.since(cid)
        for page in self._list(f"/courses/{cid}/pages", sort="updated_at", order="desc"):
            if not page.get("published", True):
                continue
            entity_id = self.present(f"page:{cid}:{page['page_id']}")
            self._marks.advance(cid, page.get("updated_at"))
            if since and (page.get("updated_at") or "") <= since:
                continue
            try:
                full = self.http.get_json(f"/api/v1/courses/{cid}/pages/{page['url']}")
            except HttpError as exc:
                if exc.status == 404:  # deleted between the listing and this read
                    self._present.discard(entity_id)
                    continue
                raise
            yield CanvasPageEntity(
                entity_id=entity_id, name=page.get("title") or page["url"], text=html_text(full.get("body")),
                breadcrumbs=[crumb], web_url=page.get("html_url") or "", created_at=parse_time(page.get("created_at")),
                updated_at=parse_time(page.get("updated_at")), raw_source_fields={"course": crumb.name})

    def _assignments(self, course: dict, crumb: Breadcrumb) -> Iterator[BaseEntity]:
        for a in self._list(f"/courses/{course['id']}/assignments"):
            if not a.get("published", True):
                continue
            meta = compact({"due_at": a.get("due_at"), "points_possible": a.get("points_possible"),
                            "submission_types": a.get("submission_types")})
            yield CanvasAssignmentEntity(
                entity_id=self.present(f"assignment:{course['id']}:{a['id']}"), name=a.get("name") or str(a["id"]),
                text=html_text(a.get("description")), breadcrumbs=[crumb], web_url=a.get("html_url") or "",
                details="; ".join(f"{k.replace('_', ' ')}: {', '.join(v) if isinstance(v, list) else v}"
                                  for k, v in meta.items()),
                created_at=parse_time(a.get("created_at")), updated_at=parse_time(a.get("updated_at")),
                raw_source_fields={**meta, "course": crumb.name})

    def _announcements(self, course: dict, crumb: Breadcrumb) -> Iterator[BaseEntity]:
        for t in self._list(f"/courses/{course['id']}/discussion_topics", only_announcements="true"):
            author = (t.get("author") or {}).get("display_name") or t.get("user_name") or ""
            yield CanvasAnnouncementEntity(
                entity_id=self.present(f"announcement:{course['id']}:{t['id']}"), name=t.get("title") or str(t["id"]),
                text=html_text(t.get("message")), details=f"Announcement by {author}" if author else "Announcement",
                breadcrumbs=[crumb], web_url=t.get("html_url") or "", created_at=parse_time(t.get("posted_at")),
                updated_at=parse_time(t.get("last_reply_at") or t.get("posted_at")),
                raw_source_fields=compact({"author": author, "course": crumb.name}))
