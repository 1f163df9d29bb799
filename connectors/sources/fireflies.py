"""Fireflies: meeting transcripts (with their summaries and action items) from Fireflies.ai.

Config: `mine_only` (default false: every transcript the key's user can see; true: only their
own meetings), `full_sync_days` (7). Auth: an API key (Integrations → Fireflies API), sent as
`Authorization: Bearer <key>`; a refused key (HTTP 401, or GraphQL `auth_failed`) marks the
connection `needs_reauth`.

API: GraphQL at `https://api.fireflies.ai/graphql`, the `transcripts(limit: 50, skip: N,
fromDate: <mark>)` query (50 is its maximum), paged by `skip` until a page is short. Fireflies
limits requests per plan (e.g. 60 a minute on Business) and answers `too_many_requests`, waited
out like HTTP 429 (the shared client's).

Entities: FirefliesTranscriptEntity (`transcript:{id}`: title, participants, the summary, the
action items and every sentence as `Speaker: text`; breadcrumb: the organizer; `web_url` the
transcript's `transcript_url`; `created_at` the meeting's date).

Incremental: cursor `{"since": {"transcripts": <newest meeting date, ISO>}, "full_at": ...}`: a run
asks for meetings from the mark. Fireflies reports no deletions, so every `full_sync_days` a run
lists every transcript and the pipeline removes what it no longer holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._graphql import GraphQLSource
from connectors.sources._saas import FULL_SYNC_DAYS, PeriodicFullListing, compact, iso, parse_time

PAGE = 50
TRANSCRIPTS = """query Transcripts($limit: Int, $skip: Int, $fromDate: DateTime, $mine: Boolean) {
  transcripts(limit: $limit, skip: $skip, fromDate: $fromDate, mine: $mine) {
    id title date duration organizer_email participants transcript_url
    summary { overview action_items keywords }
    sentences { index speaker_name text }
  }
}"""


@dataclass
class FirefliesTranscriptEntity(BaseEntity):
    """A meeting transcript: title (`name`), participants, summary, action items and sentences."""

    participants: list[str] = field(default_factory=list)
    summary: str = ""
    action_items: str = ""
    sentences: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        head = f"Participants: {', '.join(self.participants)}" if self.participants else ""
        return "\n\n".join(p for p in (f"# {self.name}", head, self.summary,
                                       f"Action items:\n{self.action_items}" if self.action_items else "",
                                       "\n".join(self.sentences)) if p)


@source(
    name="Fireflies",
    short_name="fireflies",
    description="Meeting transcripts, summaries and action items from Fireflies.ai.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_key", "API key", "string", "Integrations → Fireflies API → API key.",
                             required=True, is_secret=True),),
    config_fields=(ConfigField("mine_only", "Only my meetings", "boolean", default=False), FULL_SYNC_DAYS),
    labels=("Meetings", "Transcription"),
    entity_types=(FirefliesTranscriptEntity,),
    rate_limit_level="connection",
    rate_limit="50/minute",
    base_url="https://api.fireflies.ai",
)
class FirefliesSource(GraphQLSource, PeriodicFullListing, BaseSource):
    """Pages through `transcripts` from the mark; see the module docstring."""

    VENDOR = "Fireflies"
    THROTTLED_CODES = frozenset({"TOO_MANY_REQUESTS"})
    AUTH_CODES = frozenset({"AUTH_FAILED", "INVALID_API_KEY", "UNAUTHENTICATED"})

    def http_auth(self):
        return BearerAuth(self.credentials["api_key"])

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self.start_marks(cursor)
        since = self._marks.since("transcripts")
        skip = 0
        while True:
            variables = {"limit": PAGE, "skip": skip, "fromDate": since,
                         "mine": True if self.config.get("mine_only") else None}
            page = self.graphql(TRANSCRIPTS, variables).get("transcripts") or []
            for t in page:
                when = parse_time(t.get("date"))
                self._marks.advance("transcripts", iso(when))
                yield self._transcript(t, when)
            if len(page) < PAGE:
                return
            skip += PAGE

    def _transcript(self, t: dict, when) -> FirefliesTranscriptEntity:
        summary = t.get("summary") or {}
        organizer = t.get("organizer_email") or ""
        participants = [p for p in t.get("participants") or [] if p]
        return FirefliesTranscriptEntity(
            entity_id=f"transcript:{t['id']}", name=t.get("title") or t["id"], participants=participants,
            summary=summary.get("overview") or "", action_items=(summary.get("action_items") or "").strip(),
            sentences=[f"{s.get('speaker_name') or 'Speaker'}: {s.get('text') or ''}"
                       for s in t.get("sentences") or [] if s.get("text")],
            breadcrumbs=[Breadcrumb(f"organizer:{organizer}", organizer, "FirefliesOrganizer")] if organizer else [],
            web_url=t.get("transcript_url") or "", created_at=when, updated_at=when,
            raw_source_fields=compact({"organizer": organizer, "participants": participants,
                                       "duration_minutes": t.get("duration"),
                                       "keywords": list(summary.get("keywords") or [])}))
