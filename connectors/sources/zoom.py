"""Zoom: past meetings and the transcripts and chat files of cloud recordings.

API (REST v2, `https://api.zoom.us/v2`): the users covered (`GET /users/me` for a user's own
OAuth token; with server-to-server OAuth, or config `all_users`, `GET /users?status=active`),
per user the past meetings (`GET /users/{userId}/meetings?type=previous_meetings`) and the
cloud recordings (`GET /users/{userId}/recordings?from=&to=`, dates `yyyy-mm-dd`, a range of
at most one month per request, so longer spans are asked month by month). Every listing is
paginated by `next_page_token` ("" on the last page), `page_size` 300 at most.

Entities: ZoomMeetingEntity (`entity_id` = `meeting:<meeting uuid>`; topic, agenda, start,
duration; breadcrumb: the host) and ZoomRecordingFileEntity (`<meeting uuid>/<file id>`; the
audio transcript (`TRANSCRIPT`, WebVTT) and the in-meeting chat (`CHAT`, text) of a recording;
breadcrumbs: host → meeting). A file is downloaded (`download_url` with the bearer token,
through `self.http.download`, AIRWEAVE_MAX_FILE_BYTES applied) only when it must be indexed:
its hash is the file id and size, so an unchanged recording is kept without a download. VTT
cue numbers and timings are stripped; consecutive cues of one speaker are joined. Video and
audio files are not indexed.

Cursor: `{"recorded_to": "yyyy-mm-dd", "meetings": [<entity id>, ...], "recordings":
{<entity id>: "yyyy-mm-dd", ...}}`. The first run (or a forced full sync) lists recordings of
the last `history_days`; later runs list from `recorded_to - lookback_days` to today (Zoom
publishes a recording, and its transcript later still, after the meeting ends). Deletions: a
meeting no longer listed among past meetings, and a recording file dated inside the re-read
window but no longer listed (trashed or deleted in Zoom) are reported as deleted.

Auth: OAuth 2 (a user-managed app; `zoom.us/oauth/token`, client authenticated with HTTP
basic; Zoom rotates the refresh token on each refresh), or server-to-server OAuth (an
account-level app: credentials `account_id`, `client_id`, `client_secret`; access tokens are
obtained with the `account_credentials` grant and renewed when they expire or a call answers
401). Rate limits: HTTP 429 with `Retry-After` (retried by the client); budgets are per account.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterator

import requests

from connectors.auth.tokens import Auth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, SourceError
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import parse_time

TOKEN_URL = "https://zoom.us/oauth/token"
PAGE_SIZE = 300
MAX_WINDOW_DAYS = 30  # Zoom answers at most one month of recordings per request
INDEXED_FILES = {"TRANSCRIPT": ".vtt", "CHAT": ".txt"}
_TIMING = re.compile(r"^\d{1,2}:\d{2}(:\d{2})?[.,]\d{3}\s+-->\s+\d{1,2}:\d{2}(:\d{2})?[.,]\d{3}")


def vtt_to_text(vtt: str) -> str:
    """The spoken text of a WebVTT transcript: header, NOTE/STYLE blocks, cue numbers and timings
    removed; consecutive cues of one speaker ("Name: text") joined on one line."""
    lines: list[str] = []
    blocks = re.split(r"\r?\n\s*\r?\n", vtt.replace("\ufeff", ""))
    for block in blocks:
        rows = [r.strip() for r in block.splitlines() if r.strip()]
        if not rows or rows[0].startswith(("WEBVTT", "NOTE", "STYLE", "REGION")):
            continue
        text_rows = []
        for row in rows:
            if _TIMING.match(row) or (row.isdigit() and not text_rows):
                continue
            text_rows.append(re.sub(r"<[^>]+>", "", row))
        if not text_rows:
            continue
        text = " ".join(text_rows)
        speaker, sep, said = text.partition(": ")
        if sep and lines and lines[-1].startswith(speaker + ": ") and len(speaker) < 80:
            lines[-1] += " " + said
        else:
            lines.append(text)
    return "\n".join(lines)


class ZoomAccountAuth(Auth):
    """Server-to-server OAuth: a bearer token from the `account_credentials` grant, renewed
    before it expires and once after a 401. `credentials`: `account_id`, `client_id`,
    `client_secret`. Raises AuthFailure("invalid_credentials") when Zoom refuses them."""

    def __init__(self, credentials: dict, *, clock: Callable[[], float] = time.time):
        self.credentials = credentials
        self.clock = clock
        self.token: str | None = None
        self.expires_at = 0.0

    def __call__(self, request):
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request

    def ensure_fresh(self) -> None:
        if not self.token or self.clock() >= self.expires_at - 60:
            self._fetch()

    def refresh(self) -> bool:
        self._fetch()
        return True

    def _fetch(self) -> None:
        try:
            response = requests.post(TOKEN_URL, params={"grant_type": "account_credentials",
                                                        "account_id": self.credentials["account_id"]},
                                     auth=(self.credentials["client_id"], self.credentials["client_secret"]),
                                     timeout=(10, 30))
        except requests.RequestException as exc:
            raise SourceError(f"Zoom token endpoint unreachable: {type(exc).__name__}", "token_endpoint_error") from None
        if response.status_code in (400, 401, 403):
            try:
                reason = response.json().get("reason") or response.json().get("error") or ""
            except ValueError:
                reason = ""
            raise AuthFailure(f"Zoom refused the server-to-server credentials ({response.status_code} {reason})".strip(),
                              "invalid_credentials")
        if response.status_code >= 400:
            raise SourceError(f"Zoom token endpoint answered {response.status_code}", "token_endpoint_error")
        body = response.json()
        self.token = body["access_token"]
        self.expires_at = self.clock() + float(body.get("expires_in") or 3600)


@dataclass
class ZoomMeetingEntity(BaseEntity):
    """A past meeting (one occurrence, by its uuid)."""

    topic: str = ""
    agenda: str = ""
    host: str = ""
    duration_minutes: int = 0

    def textual_representation(self) -> str:
        head = [f"Meeting: {self.topic}", f"Host: {self.host}"]
        if self.created_at:
            head.append(f"Start: {self.created_at.isoformat()}")
        if self.duration_minutes:
            head.append(f"Duration: {self.duration_minutes} minutes")
        return "\n".join(head) + ("\n\n" + self.agenda if self.agenda else "")


@dataclass
class ZoomRecordingFileEntity(BaseEntity):
    """A transcript or chat file of a cloud recording; its text is downloaded when first needed."""

    file_id: str = ""
    file_type: str = ""
    size: int = 0
    topic: str = ""
    load: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    volatile_fields = ("updated_at",)

    def update_hash_with_content(self, digest) -> None:
        digest.update(f"file:{self.file_id}:{self.size}".encode())

    def textual_representation(self) -> str:
        if "_text" not in self.__dict__:
            self.__dict__["_text"] = self.load() if self.load else ""
        text = self.__dict__["_text"]
        if not text.strip():
            raise SkipEntity("empty transcript")
        kind = "Transcript" if self.file_type == "TRANSCRIPT" else "Chat"
        return f"{kind} of the meeting: {self.topic}\n\n{text}"


@source(
    name="Zoom",
    short_name="zoom",
    description="Past Zoom meetings with the transcripts and chats of their cloud recordings.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc", "direct"),
    oauth_type="with_rotating_refresh",
    auth_fields=(
        ConfigField("account_id", "Account ID", "string", "Server-to-server OAuth app: the account ID.", required=True),
        ConfigField("client_id", "Client ID", "string", "Server-to-server OAuth app: the client ID.", required=True),
        ConfigField("client_secret", "Client secret", "string", "Server-to-server OAuth app: the client secret.",
                    required=True, is_secret=True),
    ),
    config_fields=(
        ConfigField("all_users", "All users of the account", "boolean",
                    "Sync every active user of the account (needs an admin-level app); default: yours only, or "
                    "every user with server-to-server credentials."),
        ConfigField("history_days", "History (days)", "integer",
                    "How far back the first run lists cloud recordings.", default=365),
        ConfigField("lookback_days", "Look-back (days)", "integer",
                    "Later runs re-read recordings this many days back (transcripts arrive late).", default=7),
    ),
    labels=("Communication", "Meetings"),
    entity_types=(ZoomMeetingEntity, ZoomRecordingFileEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
    base_url="https://api.zoom.us/v2",
)
class ZoomSource(BaseSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        for name in ("history_days", "lookback_days"):
            if out.get(name, 0) < 0:
                raise ValueError(f"config field '{name}' must be 0 or more")
        return out

    @property
    def server_to_server(self) -> bool:
        return bool(self.credentials.get("account_id"))

    def http_auth(self):
        return ZoomAccountAuth(self.credentials) if self.server_to_server else super().http_auth()

    # --- listing ----------------------------------------------------------------------------

    def _pages(self, url: str, key: str, params: dict | None = None) -> Iterator[dict]:
        """Every item under `key` of a listing paginated by `next_page_token`."""
        token, seen = "", set()
        while True:
            query = {"page_size": PAGE_SIZE, **(params or {})}
            if token:
                query["next_page_token"] = token
            body = self.http.get_json(url, params=query)
            yield from body.get(key) or []
            token = body.get("next_page_token") or ""
            if not token or token in seen:
                return
            seen.add(token)

    def _users(self) -> list[dict]:
        if self.server_to_server or self.config.get("all_users"):
            return list(self._pages("/users", "users", {"status": "active"}))
        return [self.http.get_json("/users/me")]

    def _windows(self, start: date, end: date) -> Iterator[tuple[date, date]]:
        while start <= end:
            stop = min(start + timedelta(days=MAX_WINDOW_DAYS - 1), end)
            yield start, stop
            start = stop + timedelta(days=1)

    # --- entities ---------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = cursor or {}
        self._first = not previous
        today = datetime.now(timezone.utc).date()
        if previous.get("recorded_to"):
            start = date.fromisoformat(previous["recorded_to"]) - timedelta(days=int(self.config.get("lookback_days", 7)))
        else:
            start = today - timedelta(days=int(self.config.get("history_days", 365)))
        self._meetings: list[str] = []
        self._recordings: dict[str, str] = {}
        for user in self._users():
            host = user.get("display_name") or " ".join(filter(None, (user.get("first_name"), user.get("last_name")))) \
                or user.get("email") or user["id"]
            crumbs = [Breadcrumb(user["id"], host, "ZoomUser")]
            for meeting in self._pages(f"/users/{user['id']}/meetings", "meetings", {"type": "previous_meetings"}):
                entity = self._meeting(meeting, host, user, crumbs)
                if entity.entity_id not in self._meetings:
                    self._meetings.append(entity.entity_id)
                    yield entity
            for window_from, window_to in self._windows(start, today):
                for recording in self._pages(f"/users/{user['id']}/recordings", "meetings",
                                             {"from": window_from.isoformat(), "to": window_to.isoformat()}):
                    yield from self._recording_files(recording, host, crumbs)
        # Deletions: meetings no longer listed; recording files of the re-read window no longer listed.
        self._deleted = [m for m in previous.get("meetings") or [] if m not in set(self._meetings)]
        for entity_id, day in (previous.get("recordings") or {}).items():
            if entity_id in self._recordings:
                continue
            if day >= start.isoformat():
                self._deleted.append(entity_id)
            else:
                self._recordings[entity_id] = day  # older than the window: still there as far as we know
        self._recorded_to = today.isoformat()

    def _meeting(self, meeting: dict, host: str, user: dict, crumbs: list[Breadcrumb]) -> ZoomMeetingEntity:
        return ZoomMeetingEntity(
            entity_id=f"meeting:{meeting['uuid']}", name=meeting.get("topic") or "(untitled meeting)",
            breadcrumbs=crumbs, created_at=parse_time(meeting.get("start_time")),
            updated_at=parse_time(meeting.get("start_time")), web_url=meeting.get("join_url") or "",
            topic=meeting.get("topic") or "", agenda=meeting.get("agenda") or "", host=host,
            duration_minutes=int(meeting.get("duration") or 0),
            raw_source_fields={"meeting_id": meeting.get("id"), "host_email": user.get("email"),
                               "host_id": meeting.get("host_id"), "type": meeting.get("type"),
                               "timezone": meeting.get("timezone"), "duration_minutes": meeting.get("duration")},
        )

    def _recording_files(self, recording: dict, host: str, crumbs: list[Breadcrumb]) -> Iterator[BaseEntity]:
        meeting_crumb = Breadcrumb(f"meeting:{recording['uuid']}", recording.get("topic") or "", "ZoomMeetingEntity")
        day = (recording.get("start_time") or "")[:10]
        for item in recording.get("recording_files") or []:
            suffix = INDEXED_FILES.get(item.get("file_type") or "")
            if not suffix or item.get("status", "completed") != "completed" or not item.get("download_url"):
                continue
            entity_id = f"{recording['uuid']}/{item['id']}"
            self._recordings[entity_id] = day
            kind = "Transcript" if item["file_type"] == "TRANSCRIPT" else "Chat"
            yield ZoomRecordingFileEntity(
                entity_id=entity_id, name=f"{kind}: {recording.get('topic') or 'meeting'}",
                breadcrumbs=crumbs + [meeting_crumb], created_at=parse_time(item.get("recording_start")),
                updated_at=parse_time(item.get("recording_end")),
                web_url=recording.get("share_url") or item.get("play_url") or "", file_id=item["id"],
                file_type=item["file_type"], size=int(item.get("file_size") or 0), topic=recording.get("topic") or "",
                load=self._loader(item["download_url"], suffix),
                raw_source_fields={"meeting_uuid": recording["uuid"], "meeting_id": recording.get("id"),
                                   "host": host, "file_type": item["file_type"],
                                   "recording_type": item.get("recording_type"),
                                   "meeting_start": recording.get("start_time"),
                                   "duration_minutes": recording.get("duration")},
            )

    def _loader(self, url: str, suffix: str) -> Callable[[], str]:
        def load() -> str:
            try:
                path: Path = self.http.download(url, suffix=suffix)
            except HttpError as exc:
                raise SkipEntity(f"download failed: HTTP {exc.status}") from None
            text = path.read_text("utf-8", errors="replace")
            return vtt_to_text(text) if suffix == ".vtt" else text.strip()

        return load

    def is_full_listing(self) -> bool:
        return self._first

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"recorded_to": self._recorded_to, "meetings": self._meetings, "recordings": self._recordings}
