"""Google Calendar: the events of the calendars a user sees.

Auth: OAuth 2 with refresh (`calendar.readonly`). API: Calendar v3.

- Calendars: `GET users/me/calendarList` (all of them, or those named by `calendar_ids`),
  paginated by `pageToken`. Each calendar is the breadcrumb of its events.
- Events: `GET calendars/{id}/events?singleEvents=false` (a recurring event is one entity
  with its `recurrence` rules), paginated by `pageToken`; the last page carries `nextSyncToken`.
- Incremental: later runs send `syncToken` per calendar and receive only what changed;
  `status: cancelled` events become deletions. A sync token Google no longer accepts (HTTP 410
  Gone), or a calendar that left the list, starts a full listing of every calendar (absent
  events are then deleted). A calendar new to the list is listed in full.
- Access (`supports_access_control`): an event is visible to the user who connected the
  calendar (the primary calendar's id is their address), its organizer, its creator and its
  attendees (meeting rooms left out).

Entities: GoogleCalendarEventEntity, `entity_id` = "<calendar id>/<event id>" (an invitation
appears in several calendars under one event id). Cursor: `{"sync_tokens": {calendar id: token}}`.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

from django.conf import settings

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity
from connectors.converters import convert_bytes
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._google import google_json
from connectors.sources._saas import parse_time

logger = logging.getLogger(__name__)
PAGE_SIZE = 250


@dataclass
class GoogleCalendarEventEntity(BaseEntity):
    """One event (a recurring series is one event)."""

    calendar_id: str = ""
    start: str = ""
    end: str = ""
    all_day: bool = False
    location: str = ""
    description: str = ""
    organizer: str = ""
    attendees: list[str] = field(default_factory=list)
    recurrence: list[str] = field(default_factory=list)
    status: str = ""

    def textual_representation(self) -> str:
        lines = [f"# {self.name}", f"When: {self.start} – {self.end}{' (all day)' if self.all_day else ''}"]
        if self.recurrence:
            lines.append(f"Repeats: {'; '.join(self.recurrence)}")
        if self.location:
            lines.append(f"Where: {self.location}")
        if self.organizer:
            lines.append(f"Organizer: {self.organizer}")
        if self.attendees:
            lines.append(f"Attendees: {', '.join(self.attendees)}")
        return "\n".join(lines) + ("\n\n" + self.description if self.description else "")


@source(
    name="Google Calendar",
    short_name="google_calendar",
    mirrored_permissions=(("the connected user, the organizer, the creator and the attendees", True),
                          ("calendar sharing (people the calendar is shared with)", False)),
    description="Events of Google calendars, with their attendees, places and descriptions.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("calendar_ids", "Calendars", "array",
                    "Ids of the calendars to index (e.g. the user's address for the primary calendar); "
                    "all calendars of the user's list when empty.", items_type="string", default=[]),
    ),
    labels=("Productivity", "Calendar"),
    supports_access_control=True,
    entity_types=(GoogleCalendarEventEntity,),
    rate_limit_level="connection",
    rate_limit="10/second",
    base_url="https://www.googleapis.com/calendar/v3",
)
class GoogleCalendarSource(BaseSource):
    """Lists calendars and their events; see the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._deleted: list[str] = []
        self._tokens: dict[str, str] = {}
        calendars = self._calendars()
        self._me = next((c["id"] for c in calendars if c.get("primary")), "")
        previous = dict((cursor or {}).get("sync_tokens") or {})
        listed = {c["id"] for c in calendars}
        self._full = not previous or bool(set(previous) - listed)
        if not self._full:
            try:
                for calendar in calendars:
                    yield from self._events(calendar, previous.get(calendar["id"]))
                return
            except _SyncTokenGone:
                logger.info("google_calendar: a sync token expired; listing every calendar")
                self._full, self._deleted, self._tokens = True, [], {}
        for calendar in calendars:
            yield from self._events(calendar, None)

    def _calendars(self) -> list[dict]:
        wanted = set(self.config.get("calendar_ids") or [])
        calendars, params, seen = [], {"maxResults": 250}, set()
        while True:
            body = google_json(self, "users/me/calendarList", params=params)
            calendars.extend(c for c in body.get("items") or [] if not wanted or c["id"] in wanted)
            page_token = body.get("nextPageToken")
            if not page_token or page_token in seen:
                return calendars
            seen.add(page_token)
            params = {**params, "pageToken": page_token}

    def _events(self, calendar: dict, sync_token: str | None) -> Iterator[BaseEntity]:
        calendar_id = calendar["id"]
        crumb = Breadcrumb(calendar_id, calendar.get("summaryOverride") or calendar.get("summary") or calendar_id,
                           "GoogleCalendar")
        params = {"maxResults": PAGE_SIZE, "singleEvents": "false"}
        if sync_token:
            params["syncToken"] = sync_token
        page_token, seen = None, set()
        while True:
            try:
                body = google_json(self, f"calendars/{quote(calendar_id, safe='')}/events",
                                   params={**params, **({"pageToken": page_token} if page_token else {})})
            except HttpError as exc:
                if exc.status == 410 and sync_token:
                    raise _SyncTokenGone() from None
                raise
            for event in body.get("items") or []:
                if event.get("status") == "cancelled":
                    if sync_token:
                        self._deleted.append(f"{calendar_id}/{event['id']}")
                    continue
                yield self._entity(calendar_id, crumb, event)
            page_token = body.get("nextPageToken")
            if not page_token or page_token in seen:
                if body.get("nextSyncToken"):
                    self._tokens[calendar_id] = body["nextSyncToken"]
                return
            seen.add(page_token)

    def _entity(self, calendar_id: str, crumb: Breadcrumb, event: dict) -> GoogleCalendarEventEntity:
        start, end = event.get("start") or {}, event.get("end") or {}
        organizer = event.get("organizer") or {}
        creator = event.get("creator") or {}
        people = [a for a in event.get("attendees") or [] if not a.get("resource") and a.get("email")]
        attendees = [f"{a.get('displayName') or a['email']} ({a.get('responseStatus', 'needsAction')})" for a in people]
        emails = {a["email"].lower() for a in people}
        for who in (organizer, creator):
            if who.get("email") and not who["email"].endswith("calendar.google.com"):
                emails.add(who["email"].lower())
        if self._me:
            emails.add(self._me.lower())
        description = _plain(event.get("description") or "")
        summary = event.get("summary") or "(no title)"
        return GoogleCalendarEventEntity(
            entity_id=f"{calendar_id}/{event['id']}", name=summary, breadcrumbs=[crumb],
            created_at=parse_time(event.get("created")), updated_at=parse_time(event.get("updated")),
            web_url=event.get("htmlLink") or "", calendar_id=calendar_id,
            start=start.get("dateTime") or start.get("date") or "", end=end.get("dateTime") or end.get("date") or "",
            all_day="date" in start and "dateTime" not in start, location=event.get("location") or "",
            description=description, organizer=organizer.get("displayName") or organizer.get("email") or "",
            attendees=attendees, recurrence=list(event.get("recurrence") or []), status=event.get("status") or "",
            access_viewers=sorted(f"user:{e}" for e in emails if "@" in e), access_is_public=False,
            raw_source_fields={"calendar_id": calendar_id, "start": start.get("dateTime") or start.get("date"),
                               "end": end.get("dateTime") or end.get("date"), "location": event.get("location") or "",
                               "organizer": organizer.get("email") or "", "attendees": sorted(emails - {self._me}),
                               "event_type": event.get("eventType") or "default",
                               "recurring": bool(event.get("recurrence")), "status": event.get("status") or "",
                               "meeting_link": event.get("hangoutLink") or ""},
        )

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"sync_tokens": self._tokens} if self._tokens else {}


class _SyncTokenGone(Exception):
    """Google answered 410 Gone to a saved sync token."""


def _plain(description: str) -> str:
    """Event descriptions written in Google Calendar's editor are HTML; return their text."""
    if "<" not in description or ">" not in description:
        return description.strip()
    try:
        return convert_bytes(description.encode("utf-8"), Path("description.html"),
                             max_bytes=int(settings.AIRWEAVE_MAX_FILE_BYTES)).text
    except SkipEntity:
        return ""
