"""Gong: recorded calls with their transcripts, speakers named.

Config: `base_url` (`https://api.gong.io`, or the customer-specific `https://<region>.api.gong.io`
an OAuth grant names; SSRF-guarded), `full_sync_days` (7). Auth: an API access key and its secret
(Company settings → Ecosystem → API), sent as HTTP basic auth, as Gong documents; a refused key
(401) marks the connection `needs_reauth`.

API (v2): `POST /v2/calls/extensive` (`{"filter": {"fromDateTime": <mark>}, "contentSelector":
{"exposedFields": {"parties": true}}, "cursor"}`: the calls' metadata and parties, 100 a page,
paged by `records.cursor`), then `POST /v2/calls/transcript` (`{"filter": {"callIds": [...]}}`)
for the page's calls. Both read only, so they are retried like GETs. Gong allows 3 calls a second
and 10,000 a day per company and answers 429 with Retry-After, which the shared client waits out.

Entities: GongCallEntity (`call:{id}`: title, participants, and the transcript as
`Speaker: sentence` lines grouped by topic; breadcrumb: the call's direction and scope;
`web_url` the call's `url`; `created_at` when it started).

Incremental: cursor `{"since": {"calls": <newest started>}, "full_at": ...}`: a run asks for calls
from the mark. The API reports no deletions, so every `full_sync_days` a run lists every call and
the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import FULL_SYNC_DAYS, PeriodicFullListing, SelfHostedSource, compact, iso, parse_time


@dataclass
class GongCallEntity(BaseEntity):
    """A call: its title (`name`), participants and transcript lines."""

    participants: list[str] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        head = f"Participants: {', '.join(self.participants)}" if self.participants else ""
        return "\n\n".join(p for p in (f"# {self.name}", head, "\n".join(self.transcript)) if p)


@source(
    name="Gong",
    short_name="gong",
    description="Recorded calls of Gong with their transcripts.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("access_key", "Access key", "string", "Company settings → Ecosystem → API.", required=True),
        ConfigField("access_key_secret", "Access key secret", "string", required=True, is_secret=True),
    ),
    config_fields=(ConfigField("base_url", "API URL", "string", "https://api.gong.io, or your company's "
                               "https://<region>.api.gong.io.", default="https://api.gong.io"), FULL_SYNC_DAYS),
    labels=("Sales", "Meetings", "Transcription"),
    entity_types=(GongCallEntity,),
    rate_limit_level="org",
    rate_limit="3/second",
)
class GongSource(PeriodicFullListing, SelfHostedSource):
    """Lists calls from the mark with their parties, then their transcripts; see the module docstring."""

    URL_MUST_BE = "Gong's API URL, e.g. https://api.gong.io"

    def http_auth(self):
        return BasicAuth(self.credentials["access_key"], self.credentials["access_key_secret"])

    def _pages(self, path: str, body: dict, key: str) -> Iterator[list[dict]]:
        cursor = None
        while True:
            answer = self.http.post(path, json={**body, **({"cursor": cursor} if cursor else {})},
                                    idempotent=True).json()
            yield answer.get(key) or []
            cursor = (answer.get("records") or {}).get("cursor")
            if not cursor:
                return

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        since = self._marks.since("calls")
        body = {"filter": {"fromDateTime": since} if since else {},
                "contentSelector": {"exposedFields": {"parties": True}}}
        for calls in self._pages("/v2/calls/extensive", body, "calls"):
            ids = [c["metaData"]["id"] for c in calls]
            transcripts = {}
            if ids:
                for page in self._pages("/v2/calls/transcript", {"filter": {"callIds": ids}}, "callTranscripts"):
                    transcripts.update({t["callId"]: t.get("transcript") or [] for t in page})
            for call in calls:
                meta = call["metaData"]
                self._marks.advance("calls", iso(parse_time(meta.get("started"))))
                yield self._call(meta, call.get("parties") or [], transcripts.get(meta["id"], []))

    def _call(self, meta: dict, parties: list[dict], transcript: list[dict]) -> GongCallEntity:
        speakers = {p.get("speakerId"): p.get("name") or p.get("emailAddress") or "Speaker" for p in parties}
        lines = []
        for block in transcript:
            if block.get("topic"):
                lines.append(f"[{block['topic']}]")
            who = speakers.get(block.get("speakerId"), "Speaker")
            lines += [f"{who}: {s.get('text')}" for s in block.get("sentences") or [] if s.get("text")]
        people = [p.get("name") or p.get("emailAddress") for p in parties if p.get("name") or p.get("emailAddress")]
        kind = " · ".join(x for x in (meta.get("direction"), meta.get("scope")) if x)
        started = parse_time(meta.get("started"))
        return GongCallEntity(
            entity_id=f"call:{meta['id']}", name=meta.get("title") or f"Call {meta['id']}", participants=people,
            transcript=lines, breadcrumbs=[Breadcrumb(f"kind:{kind}", kind, "GongCallKind")] if kind else [],
            web_url=meta.get("url") or "", created_at=started, updated_at=started,
            raw_source_fields=compact({"direction": meta.get("direction"), "scope": meta.get("scope"),
                                       "media": meta.get("media"), "duration_seconds": meta.get("duration"),
                                       "purpose": meta.get("purpose"), "participants": people}))
