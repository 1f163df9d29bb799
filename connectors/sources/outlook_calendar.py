"""Outlook Calendar: the events of the signed-in user's primary calendar, in a window around today.

API (Microsoft Graph v1.0): `GET /me` (the user's address, for access control), `GET /me/calendar`
(the calendar's name, the breadcrumb of its events), then a delta round of the calendar view
`GET /me/calendarView/delta?startDateTime=...&endDateTime=...` (see connectors/sources/_msgraph.py)
with `Prefer: outlook.body-content-type="text", odata.maxpagesize=50`. The calendar view expands
recurring series into their occurrences and exceptions, so each meeting a person would see on a
day is one entity. The window (config `past_days` back and `future_days` ahead of the first run,
365 each by default) is fixed by the round's first request and carried by its delta link; once
its start is more than `past_days` + WINDOW_SLACK_DAYS behind today a new full round with a new
window begins, so the view does not drift into the past.

Incremental: later runs follow the saved `@odata.deltaLink` and receive only what changed; an
event `@removed` (deleted, or moved out of the window) is deleted here; an expired link (410)
starts a full round, after which absent events are deleted. Cancelled events are kept with
`is_cancelled` (Outlook still shows them until they are removed).

Access (`supports_access_control`): an event is visible to the user who connected the calendar,
its organizer and its attendees (`type: resource`, rooms and equipment, left out).

Entities: OutlookCalendarEventEntity, `entity_id` = the event (or occurrence) id; `web_url` =
`webLink`. Cursor: `{"delta_link": ..., "window_start": "<ISO date>"}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Iterator

from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.notifications.vendors import OutlookCalendarNotifications
from connectors.registry import source
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE, DeltaRound,
                                         GraphSource, body_text, email_address, graph_time, is_removed)

DELTA_PREFER = 'outlook.body-content-type="text", odata.maxpagesize=50'
WINDOW_SLACK_DAYS = 30


@dataclass
class OutlookCalendarEventEntity(BaseEntity):
    """One event, or one occurrence of a recurring series, of an Outlook calendar."""

    starts: str = ""
    ends: str = ""
    time_zone: str = ""
    is_all_day: bool = False
    is_cancelled: bool = False
    location: str = ""
    organizer: str = ""
    attendees: list[str] = field(default_factory=list)
    body: str = ""
    online_meeting_url: str = ""

    def textual_representation(self) -> str:
        head = [f"Event: {self.name}", f"When: {self.starts} - {self.ends} ({self.time_zone})"
                + (" all day" if self.is_all_day else "")]
        if self.is_cancelled:
            head.append("Status: cancelled")
        if self.location:
            head.append(f"Where: {self.location}")
        if self.organizer:
            head.append(f"Organizer: {self.organizer}")
        if self.attendees:
            head.append("Attendees: " + ", ".join(self.attendees))
        return "\n".join(head) + ("\n\n" + self.body.strip() if self.body.strip() else "")


@source(
    name="Outlook Calendar",
    short_name="outlook_calendar",
    notifications=OutlookCalendarNotifications,
    description="Events of your Outlook / Microsoft 365 calendar (recurring series expanded), with their "
                "attendees as access control, kept fresh with delta queries.",
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(
        ConfigField("past_days", "Days back", "integer", "How far back from today events are indexed.", default=365),
        ConfigField("future_days", "Days ahead", "integer", "How far ahead of today events are indexed.", default=365),
    ),
    labels=("Productivity", "Calendar"),
    supports_access_control=True,
    mirrored_permissions=(("the connected user, the organizer and the attendees (rooms left out)", True),
                          ("delegates and people the calendar is shared with", False)),
    entity_types=(OutlookCalendarEventEntity,),
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)
class OutlookCalendarSource(GraphSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        for name in ("past_days", "future_days"):
            if not 0 <= out[name] <= 3650:
                raise ValueError(f"config field '{name}' must be between 0 and 3650 days")
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        cursor = cursor or {}
        today = datetime.now(timezone.utc).date()
        link, window_start = cursor.get("delta_link"), cursor.get("window_start")
        if window_start and date.fromisoformat(window_start) < today - timedelta(
                days=self.config["past_days"] + WINDOW_SLACK_DAYS):
            link = None  # the window has slid too far into the past: a new round, a new window
        if not link:
            window_start = (today - timedelta(days=self.config["past_days"])).isoformat()
        end = (today + timedelta(days=self.config["future_days"])).isoformat()
        me = self.http.get_json("/me", params={"$select": "mail,userPrincipalName,displayName"})
        self._me = (me.get("mail") or me.get("userPrincipalName") or "").lower()
        calendar = self.http.get_json("/me/calendar", params={"$select": "id,name"})
        crumbs = [Breadcrumb(calendar["id"], calendar.get("name") or "Calendar", "OutlookCalendar")]
        self._round = DeltaRound(self.http, "/me/calendarView/delta", delta_link=link,
                                 params={"startDateTime": f"{window_start}T00:00:00Z", "endDateTime": f"{end}T00:00:00Z"},
                                 headers={"Prefer": DELTA_PREFER})
        self._window_start = window_start
        self._deleted: list[str] = []
        for event in self._round:
            if is_removed(event):
                self._deleted.append(event["id"])
            else:
                yield self._event(event, crumbs)

    def _event(self, event: dict, crumbs: list[Breadcrumb]) -> OutlookCalendarEventEntity:
        text = body_text(event)
        people = [a for a in event.get("attendees") or [] if a.get("type") != "resource"]
        organizer = event.get("organizer")
        emails = {(p.get("emailAddress") or {}).get("address", "").lower() for p in [*people, organizer or {}]}
        emails.add(self._me)
        start, end = event.get("start") or {}, event.get("end") or {}
        return OutlookCalendarEventEntity(
            entity_id=event["id"], name=event.get("subject") or "(no title)", breadcrumbs=crumbs,
            created_at=graph_time(event.get("createdDateTime")), updated_at=graph_time(event.get("lastModifiedDateTime")),
            web_url=event.get("webLink") or "", starts=start.get("dateTime") or "", ends=end.get("dateTime") or "",
            time_zone=start.get("timeZone") or "", is_all_day=bool(event.get("isAllDay")),
            is_cancelled=bool(event.get("isCancelled")),
            location=(event.get("location") or {}).get("displayName") or "",
            organizer=email_address(organizer), attendees=[email_address(a) for a in people], body=text,
            online_meeting_url=(event.get("onlineMeeting") or {}).get("joinUrl") or "",
            access_viewers=sorted(f"user:{e}" for e in emails if "@" in e), access_is_public=False,
            raw_source_fields={"start": start.get("dateTime"), "end": end.get("dateTime"),
                               "time_zone": start.get("timeZone"), "type": event.get("type"),
                               "series_master_id": event.get("seriesMasterId"), "categories": event.get("categories") or [],
                               "show_as": event.get("showAs"), "is_cancelled": bool(event.get("isCancelled")),
                               "organizer": email_address(organizer),
                               "response": (event.get("responseStatus") or {}).get("response")},
        )

    def is_full_listing(self) -> bool:
        return self._round.full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        if not self._round.delta_link:
            return {}
        return {"delta_link": self._round.delta_link, "window_start": self._window_start}
