"""Microsoft Teams: the teams the signed-in user joined, their channels, and the channels' messages and replies.

API (Microsoft Graph v1.0, see connectors/sources/_msgraph.py for paging and delta rounds):
`GET /me/joinedTeams`, `GET /teams/{team}/channels` (`membershipType`: standard | private |
shared), per channel a delta round of its root messages (`GET /teams/{team}/channels/{channel}/
messages/delta`, `$top=50`) and, for every root message listed, its replies
(`GET .../messages/{message}/replies`). Members for access control: `GET /teams/{team}/members`
and `GET /teams/{team}/channels/{channel}/members` (conversation members carry `email`).

Entities: TeamsTeamEntity (`entity_id` = team id), TeamsChannelEntity (channel id; breadcrumb:
the team) and TeamsMessageEntity (`<channel id>/<message id>` for a root message,
`<channel id>/<root id>/<reply id>` for a reply; breadcrumbs: team → channel → thread (the root
message) for replies). Message ids are unique only within a channel, hence the prefix. HTML
bodies become text with BeautifulSoup (`<at>` mentions keep the name). System event messages
(member added, channel renamed, ...) are left out. `web_url` is the message's `webUrl`.

Cursor: `{"channels": {<channel id>: {"team": <team id>, "delta_link": ..., "threads": {<root id>:
{"at": <root created ISO>, "replies": [<reply id>, ...]}}}}}`. The first run (or a forced full
sync, or an expired delta link: 410) is a full round; later runs list roots added or changed
since the link, re-read their replies, and also re-read the replies of threads started within
`reply_lookback_days` (a new reply does not reliably surface its root in the delta round).
Deletions: a root `@removed` or soft-deleted (`deletedDateTime` set) is deleted with its replies;
a reply no longer listed (or soft-deleted) when its thread is re-read is deleted; a channel no
longer listed is deleted with everything stored under it. Graph's delta returns root messages
of the last eight months only; older history is out of its reach (a documented Graph limit).

Access control: a team's standard channels are visible to the team's members
(`group:<team id>`); a private or shared channel to its own members (`group:<channel id>`);
members are stored as `user:<email>`; a member without an e-mail address is left out.

Auth: OAuth 2 through the Microsoft identity platform, rotating refresh tokens; scopes
`Team.ReadBasic.All Channel.ReadBasic.All ChannelMessage.Read.All ChannelMember.Read.All
TeamMember.Read.All` (delegated). Throttling (429 with `Retry-After`) is the HTTP client's.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterable, Iterator

from bs4 import BeautifulSoup

from connectors.base import AccessMembership, BaseEntity, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE, DeltaRound,
                                         GraphSource, graph_time, is_removed, pages)

PRIVATE_KINDS = ("private", "shared")


def html_to_text(html: str) -> str:
    """The visible text of a Teams message body (HTML), paragraphs and line breaks kept as new lines."""
    if not html:
        return ""
    soup = BeautifulSoup(html, "lxml")
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for tag in soup.find_all(["p", "div", "li", "tr", "h1", "h2", "h3", "blockquote"]):
        tag.insert_after("\n")
    lines = [" ".join(line.split()) for line in soup.get_text().splitlines()]
    return "\n".join(line for line in lines if line)


def _is_deleted(message: dict) -> bool:
    return is_removed(message) or bool(message.get("deletedDateTime"))


def _author(message: dict) -> str:
    sender = message.get("from") or {}
    who = sender.get("user") or sender.get("application") or sender.get("device") or {}
    return who.get("displayName") or ""


@dataclass
class TeamsTeamEntity(BaseEntity):
    """A team."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"Team: {self.name}\n\n{self.description}".strip()


@dataclass
class TeamsChannelEntity(BaseEntity):
    """A channel of a team."""

    description: str = ""
    membership_type: str = "standard"

    def textual_representation(self) -> str:
        return f"Channel: {self.name}\n\n{self.description}".strip()


@dataclass
class TeamsMessageEntity(BaseEntity):
    """A channel message: a thread's root message or one of its replies."""

    author: str = ""
    subject: str = ""
    body: str = ""
    reply_to_id: str = ""

    def textual_representation(self) -> str:
        head = [f"From: {self.author}"] if self.author else []
        if self.subject:
            head.append(f"Subject: {self.subject}")
        if self.created_at:
            head.append(f"Date: {self.created_at.isoformat()}")
        return "\n".join(head) + "\n\n" + self.body.strip()


@source(
    name="Microsoft Teams",
    short_name="teams",
    mirrored_permissions=(("standard channels: the team's members", True),
                          ("private and shared channels: their own members", True),
                          ("members without an e-mail address", False)),
    description="Channel conversations of your Microsoft Teams (messages and replies), kept fresh with delta queries; "
                "private channels stay visible to their members only.",
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(
        ConfigField("teams", "Teams", "array", "Team names to sync; empty: every team you joined.",
                    items_type="string"),
        ConfigField("include_private_channels", "Include private channels", "boolean",
                    "Sync private and shared channels you are a member of (visible to their members only).",
                    default=True),
        ConfigField("reply_lookback_days", "Reply look-back (days)", "integer",
                    "Incremental runs re-read the replies of threads started this many days ago or later.",
                    default=7),
    ),
    labels=("Communication",),
    entity_types=(TeamsTeamEntity, TeamsChannelEntity, TeamsMessageEntity),
    supports_access_control=True,
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)
class TeamsSource(GraphSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        if out.get("reply_lookback_days", 7) < 0:
            raise ValueError("config field 'reply_lookback_days' must be 0 or more")
        return out

    # --- listing ----------------------------------------------------------------------------

    def _teams(self) -> list[tuple[dict, list[dict]]]:
        """[(team, [channel, ...]), ...] of the teams covered; listed once per run."""
        if getattr(self, "_listing", None) is None:
            wanted = {n.strip().lower() for n in self.config.get("teams") or [] if n.strip()}
            listing = []
            for team in pages(self.http, "/me/joinedTeams", params={"$select": "id,displayName,description,webUrl"}):
                if wanted and (team.get("displayName") or "").lower() not in wanted:
                    continue
                channels = [c for c in pages(self.http, f"/teams/{team['id']}/channels", params={
                    "$select": "id,displayName,description,membershipType,webUrl,createdDateTime"})
                    if self.config.get("include_private_channels", True)
                    or (c.get("membershipType") or "standard") not in PRIVATE_KINDS]
                listing.append((team, channels))
            self._listing = listing
        return self._listing

    def _access(self, team: dict, channel: dict | None = None) -> dict:
        if channel is not None and (channel.get("membershipType") or "standard") in PRIVATE_KINDS:
            return {"access_viewers": [f"group:{channel['id']}"], "access_is_public": False}
        return {"access_viewers": [f"group:{team['id']}"], "access_is_public": False}

    def generate_access_memberships(self) -> Iterable[AccessMembership]:
        """Members of each team (`group:<team id>`) and of each private/shared channel (`group:<channel id>`)."""
        memberships = []
        for team, channels in self._teams():
            groups = [(team["id"], f"/teams/{team['id']}/members")]
            groups += [(c["id"], f"/teams/{team['id']}/channels/{c['id']}/members") for c in channels
                       if (c.get("membershipType") or "standard") in PRIVATE_KINDS]
            for group_id, url in groups:
                try:
                    members = list(pages(self.http, url))
                except HttpError as exc:
                    if exc.status in (403, 404):
                        continue  # no listed members: the group's entities stay closed
                    raise
                for member in members:
                    email = (member.get("email") or "").strip().lower()
                    if email:
                        memberships.append(AccessMembership(group_id, f"user:{email}"))
        return memberships

    # --- entities ---------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = dict((cursor or {}).get("channels") or {})
        self._state: dict[str, dict] = {}
        self._deleted: list[str] = []
        self._full = True
        lookback = timedelta(days=int(self.config.get("reply_lookback_days", 7)))
        self._horizon = (datetime.now(timezone.utc) - lookback).isoformat()
        for team, channels in self._teams():
            team_crumb = Breadcrumb(team["id"], team.get("displayName") or "", "TeamsTeamEntity")
            yield TeamsTeamEntity(
                entity_id=team["id"], name=team.get("displayName") or "(unnamed team)", web_url=team.get("webUrl") or "",
                description=team.get("description") or "", raw_source_fields={"team_id": team["id"]},
                **self._access(team))
            for channel in channels:
                yield TeamsChannelEntity(
                    entity_id=channel["id"], name=channel.get("displayName") or "", breadcrumbs=[team_crumb],
                    created_at=graph_time(channel.get("createdDateTime")), web_url=channel.get("webUrl") or "",
                    description=channel.get("description") or "",
                    membership_type=channel.get("membershipType") or "standard",
                    raw_source_fields={"team": team.get("displayName"), "team_id": team["id"],
                                       "membership_type": channel.get("membershipType") or "standard"},
                    **self._access(team, channel))
                yield from self._channel_messages(team, channel, team_crumb, previous.pop(channel["id"], {}))
        # Channels (or teams) no longer listed: everything stored under them is gone.
        for channel_id, state in previous.items():
            self._deleted.append(channel_id)
            for root_id, thread in (state.get("threads") or {}).items():
                self._deleted += self._thread_ids(channel_id, root_id, thread.get("replies") or [])

    @staticmethod
    def _thread_ids(channel_id: str, root_id: str, replies: list[str]) -> list[str]:
        return [f"{channel_id}/{root_id}"] + [f"{channel_id}/{root_id}/{r}" for r in replies]

    def _channel_messages(self, team: dict, channel: dict, team_crumb: Breadcrumb,
                          state: dict) -> Iterator[BaseEntity]:
        base = f"/teams/{team['id']}/channels/{channel['id']}/messages"
        threads: dict[str, dict] = dict(state.get("threads") or {}) if state.get("delta_link") else {}
        round_ = DeltaRound(self.http, f"{base}/delta", params={"$top": 50}, delta_link=state.get("delta_link"))
        crumbs = [team_crumb, Breadcrumb(channel["id"], channel.get("displayName") or "", "TeamsChannelEntity")]
        access = self._access(team, channel)
        listed: set[str] = set()
        for message in round_:
            if _is_deleted(message):
                thread = threads.pop(message["id"], None) or {}
                self._deleted += self._thread_ids(channel["id"], message["id"], thread.get("replies") or [])
                continue
            if message.get("messageType", "message") != "message":
                continue
            listed.add(message["id"])
            yield self._message(message, channel, crumbs, access)
            yield from self._replies(base, message, channel, crumbs, access, threads)
        if round_.full:  # a first round, or an expired link (410): threads not listed are gone
            for root_id in set(threads) - listed:
                self._deleted += self._thread_ids(channel["id"], root_id, threads.pop(root_id).get("replies") or [])
        else:  # threads started within the look-back window: a new reply may not surface its root
            for root_id, thread in list(threads.items()):
                if root_id not in listed and (thread.get("at") or "") >= self._horizon:
                    stub = {"id": root_id, "createdDateTime": thread["at"], "subject": thread.get("name"), "_stub": True}
                    yield from self._replies(base, stub, channel, crumbs, access, threads)
        self._full = self._full and round_.full
        self._state[channel["id"]] = {"team": team["id"], "delta_link": round_.delta_link, "threads": threads}

    def _replies(self, base: str, root: dict, channel: dict, crumbs: list[Breadcrumb], access: dict,
                 threads: dict) -> Iterator[BaseEntity]:
        before = set((threads.get(root["id"]) or {}).get("replies") or [])
        try:
            replies = list(pages(self.http, f"{base}/{root['id']}/replies", params={"$top": 50}))
        except HttpError as exc:
            if exc.status != 404 or not root.get("_stub"):
                raise
            replies = None  # the root is gone: the next delta round reports it
        if replies is None:
            return
        thread_crumb = Breadcrumb(f"{channel['id']}/{root['id']}", _thread_name(root), "TeamsMessageEntity")
        kept = []
        for reply in replies:
            if _is_deleted(reply) or reply.get("messageType", "message") != "message":
                continue
            kept.append(reply["id"])
            yield self._message(reply, channel, crumbs + [thread_crumb], access, root_id=root["id"])
        for gone in before - set(kept):
            self._deleted.append(f"{channel['id']}/{root['id']}/{gone}")
        threads[root["id"]] = {"at": root.get("createdDateTime") or "", "name": _thread_name(root), "replies": kept}

    def _message(self, message: dict, channel: dict, crumbs: list[Breadcrumb], access: dict,
                 root_id: str | None = None) -> TeamsMessageEntity:
        body = message.get("body") or {}
        content = body.get("content") or ""
        text = html_to_text(content) if (body.get("contentType") or "html") == "html" else content
        entity_id = f"{channel['id']}/{root_id}/{message['id']}" if root_id else f"{channel['id']}/{message['id']}"
        author = _author(message)
        attachments = [a.get("name") for a in message.get("attachments") or [] if a.get("name")]
        if attachments:
            text += "\n\nAttachments: " + ", ".join(attachments)
        return TeamsMessageEntity(
            entity_id=entity_id, name=_thread_name(message) if not root_id else f"Reply by {author or 'unknown'}",
            breadcrumbs=crumbs, created_at=graph_time(message.get("createdDateTime")),
            updated_at=graph_time(message.get("lastEditedDateTime") or message.get("lastModifiedDateTime")),
            web_url=message.get("webUrl") or "", author=author, subject=message.get("subject") or "", body=text,
            reply_to_id=root_id or "",
            raw_source_fields={"team": crumbs[0].name, "channel": channel.get("displayName"),
                               "channel_id": channel["id"], "message_id": message["id"], "author": author,
                               "is_reply": bool(root_id), "thread_id": root_id or message["id"],
                               "importance": message.get("importance"),
                               "mentions": [m.get("mentionText") for m in message.get("mentions") or []],
                               "attachments": attachments},
            **access)

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return list(dict.fromkeys(self._deleted))

    def next_cursor(self) -> dict:
        return {"channels": {k: v for k, v in self._state.items() if v.get("delta_link")}}


def _thread_name(message: dict) -> str:
    """A root message's title: its subject, else the start of its text."""
    if message.get("subject"):
        return message["subject"]
    text = html_to_text((message.get("body") or {}).get("content") or "")
    first = text.split("\n", 1)[0] if text else ""
    return (first[:80] + "…") if len(first) > 80 else (first or "(message)")
