"""Cal.com: the bookings of a Cal.com account (cloud or self-hosted), with attendees and notes.

Config: `base_url` (`https://api.cal.com`, or a self-hosted instance's API; SSRF-guarded). Auth:
an API key (Settings → Developer → API keys, `cal_live_...`), sent as `Authorization: Bearer
<key>`; a refused key (401) marks the connection `needs_reauth`.

API (v2, header `cal-api-version: 2024-08-13`): `GET /v2/bookings?take=100&skip=N&sortUpdatedAt=desc`
answers `{"status": "success", "data": [...], "pagination": {"hasNextPage", ...}}`: the bookings,
most recently updated first, paged by `skip` while `hasNextPage`. Cal.com answers 429 with
Retry-After past its per-key budget (120 a minute by default), which the shared client waits out.

Entities: CalcomBookingEntity (`booking:{uid}`: title, status, start and end, hosts, attendees,
location and the booker's description; breadcrumb: the event type; `web_url`
`https://app.cal.com/booking/<uid>`; cancellation reason and times in `raw_source_fields`).

Incremental: cursor `{"since": {"bookings": <newest updatedAt>}}`: an incremental run walks the
bookings newest-updated first and stops at the mark. Cal.com does not delete bookings (it
cancels or rejects them, which moves `updatedAt`): a cancelled or rejected booking is reported
deleted, so search finds only meetings that will happen or did.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import SelfHostedSource, WatermarkSource, Watermarks, parse_time

TAKE = 100
API_VERSION = "2024-08-13"
GONE = ("cancelled", "rejected")


@dataclass
class CalcomBookingEntity(BaseEntity):
    """A booking: when, who and what it is about."""

    status: str = ""
    when: str = ""
    people: list[str] = field(default_factory=list)
    description: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", f"{self.status}, {self.when}",
                                       "with " + ", ".join(self.people) if self.people else "", self.description) if p)


@source(
    name="Cal.com",
    short_name="calcom",
    description="Bookings of a Cal.com account, with their hosts, attendees and notes.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "Settings → Developer → API keys.", required=True,
                             is_secret=True),),
    config_fields=(ConfigField("base_url", "API URL", "string", "https://api.cal.com, or your own instance's API.",
                               default="https://api.cal.com"),),
    labels=("Productivity", "Calendar"),
    entity_types=(CalcomBookingEntity,),
    rate_limit_level="connection",
    rate_limit="120/minute",
)
class CalcomSource(WatermarkSource, SelfHostedSource):
    """Walks bookings newest-updated first down to the mark; see the module docstring."""

    URL_MUST_BE = "an http(s) URL, e.g. https://api.cal.com"

    def http_auth(self):
        return BearerAuth(self.credentials["api_key"])

    def http_headers(self) -> dict:
        return {"cal-api-version": API_VERSION}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        since = self._marks.since("bookings")
        skip = 0
        while True:
            body = self.http.get_json("/v2/bookings", params={"take": TAKE, "skip": skip, "sortUpdatedAt": "desc"})
            for booking in body.get("data") or []:
                updated = booking.get("updatedAt") or booking.get("createdAt")
                if since and updated and updated <= since:
                    return
                self._marks.advance("bookings", updated)
                if (booking.get("status") or "").lower() in GONE:
                    self._marks.delete(f"booking:{booking['uid']}")
                    continue
                yield self._booking(booking)
            if not (body.get("pagination") or {}).get("hasNextPage"):
                return
            skip += TAKE

    def _booking(self, b: dict) -> CalcomBookingEntity:
        hosts = [h.get("name") or h.get("email") for h in b.get("hosts") or []]
        attendees = [a.get("name") or a.get("email") for a in b.get("attendees") or []]
        event_type = b.get("eventType") or {}
        crumbs = [Breadcrumb(f"event_type:{event_type.get('id') or b.get('eventTypeId')}",
                             event_type.get("slug") or str(b.get("eventTypeId")), "event_type")] \
            if event_type or b.get("eventTypeId") else []
        return CalcomBookingEntity(
            entity_id=f"booking:{b['uid']}", name=b.get("title") or b["uid"], status=b.get("status") or "",
            when=f"{b.get('start')} to {b.get('end')}", people=[p for p in hosts + attendees if p],
            description=b.get("description") or "", breadcrumbs=crumbs,
            created_at=parse_time(b.get("createdAt")), updated_at=parse_time(b.get("updatedAt")),
            web_url=f"https://app.cal.com/booking/{b['uid']}",
            raw_source_fields={"status": b.get("status"), "start": b.get("start"), "end": b.get("end"),
                               "location": b.get("location") or b.get("meetingUrl"), "hosts": hosts,
                               "attendees": [a.get("email") for a in b.get("attendees") or []]})
