"""Slack: the channels of a workspace and their messages and threads, synced or searched at query time.

Each connection works in one of two modes (config `federated_search`):

- **sync** (default): conversations, their messages and thread replies are indexed into the
  collection. API (Web API, `https://slack.com/api/<method>`): `auth.test` (the workspace's URL
  for permalinks), `users.list` (names and e-mail addresses), `conversations.list`
  (`types=public_channel,private_channel[,mpim,im]`), `conversations.history` and
  `conversations.replies` per channel, `conversations.members` per private conversation. Every
  listing is paginated by `cursor` / `response_metadata.next_cursor` ("" on the last page).
- **federated**: nothing is indexed; each search of the collection asks Slack's
  `search.messages` (a *user* token with `search:read`) and the hits are merged into the
  results by the FederatedSearch operation. The sync job of such a connection still runs: it
  checks the token and stores the members of private conversations, so that private hits reach
  only their members.

A connection is never both: a synced message would come back a second time as a federated hit
(with no way to tell them apart before ranking), so federating is an opt-in per connection.

Entities: SlackChannelEntity (`entity_id` = channel id; breadcrumb: the workspace) and
SlackMessageEntity (`<channel id>:<ts>`; breadcrumbs: workspace, channel, and for a thread reply
the thread's first message). `web_url` is the message's permalink
(`https://<workspace>.slack.com/archives/<channel>/p<ts without the dot>`, with `thread_ts` for
replies). Mentions (`<@U…>`, `<#C…|name>`, `<!here>`, links) are rewritten to readable text.

Access control: public channels are open to the organization (guests too, although Slack shows
guests only the channels they are in); a private channel, a group DM or a DM is visible to its
members: its entities carry the viewer `group:<channel id>`, and the channel's members are
stored as that group's members (`user:<e-mail>`, from `users.list`; members without a visible
e-mail address are left out), so a membership change needs no re-indexing.

Cursor (incremental runs): `{"channels": {<channel id>: {"latest": <newest ts seen>,
"recent": [[<thread ts>, <ts>], ...]}}}`. Slack has no "changed since" listing, so an incremental
run re-reads each channel from `latest - thread_lookback_days`: it sees new messages, edits,
new replies to threads started in that window, and deletions in that window (a message of
`recent` missing from the new listing, a `tombstone` parent, or a channel no longer listed).
Older changes (a reply to an old thread, an old message deleted) are picked up by a forced full
sync, whose full listing removes whatever is gone.

Auth: OAuth 2 v2 (`oauth.v2.access`). The browser flow asks for bot scopes and user scopes;
the user token (`authed_user.access_token`) is preferred when present (it reads what the user
can read, and it is the only kind `search.messages` accepts), else the bot token. An injected
token (`{"access_token": "xoxp-…" | "xoxb-…"}`) works the same. Tokens never expire unless the
Slack app has token rotation on; then they expire after 12 hours and are refreshed with the
single-use refresh token (rotated: `with_rotating_refresh`). Slack answers errors as HTTP 200
`{"ok": false, "error": "..."}`: `invalid_auth`, `not_authed`, `account_inactive`,
`token_revoked` → `invalid_credentials`; `token_expired` → one refresh, then `token_expired`;
`missing_scope` → `insufficient_scope`. Rate limits: HTTP 429 with `Retry-After` (retried by
the client); the budget is per workspace, declared per organization.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Iterator

from connectors.auth.store import CredentialStore, MemoryCredentialStore
from connectors.auth.tokens import OAuth2Auth, default_auth_for
from connectors.base import (AccessMembership, AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField,
                             SourceError)
from connectors.http import cursor_pages
from connectors.notifications.vendors import SlackNotifications
from connectors.registry import source

PAGE_SIZE = 200  # Slack's recommended page size for conversations.* and users.list (max 1000)
SEARCH_PAGE_MAX = 100  # search.messages' `count` cap
SEARCH_MAX_PAGES = 3
RECENT_MAX_PER_CHANNEL = 5000  # cap of the deletion-detection window kept in the cursor

_AUTH_ERRORS = {
    "invalid_auth": "invalid_credentials", "not_authed": "invalid_credentials",
    "account_inactive": "invalid_credentials", "token_revoked": "invalid_credentials",
    "no_permission": "insufficient_scope", "missing_scope": "insufficient_scope",
    "not_allowed_token_type": "insufficient_scope", "token_expired": "token_expired",
}
# Conversations whose messages cannot be read by this token: skipped, not a failed sync.
_UNREADABLE = {"not_in_channel", "channel_not_found", "missing_scope_for_channel", "is_archived_and_not_readable"}
_SKIPPED_SUBTYPES = {"channel_join", "channel_leave", "bot_add", "bot_remove", "channel_purpose", "channel_topic",
                     "channel_name", "group_join", "group_leave", "pinned_item", "unpinned_item"}

_MENTION = re.compile(r"<([@#!])([^>|]+)(?:\|([^>]*))?>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")


class SlackAPIError(SourceError):
    """Slack answered `{"ok": false, "error": <code>}`; `code` is Slack's error string."""

    def __init__(self, method: str, code: str):
        super().__init__(f"Slack {method} failed: {code}", "source_error")
        self.code = code


def ts_datetime(ts: str | None) -> datetime | None:
    """A Slack timestamp ("1781688474.091639", seconds since the epoch) as an aware datetime."""
    return datetime.fromtimestamp(float(ts), tz=timezone.utc) if ts else None


def permalink(base_url: str, channel_id: str, ts: str, thread_ts: str | None = None) -> str:
    """`https://<workspace>.slack.com/archives/<channel>/p<ts digits>` (+ thread for replies)."""
    link = f"{base_url.rstrip('/')}/archives/{channel_id}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        link += f"?thread_ts={thread_ts}&cid={channel_id}"
    return link


@dataclass
class SlackChannelEntity(BaseEntity):
    """A channel, private channel, group DM or DM."""

    topic: str = ""
    purpose: str = ""
    is_private: bool = False
    is_archived: bool = False
    member_count: int = 0

    volatile_fields = ("updated_at",)

    def textual_representation(self) -> str:
        kind = "Private channel" if self.is_private else "Channel"
        parts = [f"# {self.name}", f"{kind} #{self.name}{' (archived)' if self.is_archived else ''}"]
        if self.topic:
            parts.append(f"Topic: {self.topic}")
        if self.purpose:
            parts.append(f"Purpose: {self.purpose}")
        return "\n\n".join(parts)


@dataclass
class SlackMessageEntity(BaseEntity):
    """A message of a conversation, or a reply in a thread."""

    channel_id: str = ""
    channel_name: str = ""
    ts: str = ""
    thread_ts: str = ""
    author: str = ""
    author_id: str = ""
    text: str = ""
    reply_count: int = 0  # not hashed: a new reply does not re-index its parent
    files: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        where = f"#{self.channel_name}" if self.channel_name else self.channel_id
        kind = "Reply in a thread" if self.thread_ts and self.thread_ts != self.ts else "Message"
        text = f"{kind} by {self.author or 'unknown'} in {where}:\n\n{self.text}"
        if self.files:
            text += "\n\nFiles: " + ", ".join(self.files)
        return text.strip()


class _UserTokenStore(CredentialStore):
    """The user token of a browser-flow connection (`credentials["authed_user"]`) as a credential
    store of its own, so that a rotated user token is refreshed and saved like a top-level one."""

    def __init__(self, parent: CredentialStore):
        self.parent = parent
        self._outer: dict = {}

    def load(self) -> dict:
        return _user_token(self.parent.load())

    @contextmanager
    def locked(self):
        with self.parent.locked() as latest:
            self._outer = dict(latest or {})
            yield _user_token(self._outer)

    def save(self, credentials: dict) -> None:
        user = {**(self._outer.get("authed_user") or {}),
                **{k: credentials[k] for k in ("access_token", "refresh_token", "expires_at", "token_type")
                   if credentials.get(k) is not None}}
        self._outer = {**self._outer, "authed_user": user}
        self.parent.save(self._outer)

    def mark_needs_reauth(self, category: str, message: str) -> None:
        self.parent.mark_needs_reauth(category, message)


def _user_token(credentials: dict) -> dict:
    user = credentials.get("authed_user") or {}
    out = {k: user[k] for k in ("access_token", "refresh_token", "expires_at", "token_type") if user.get(k)}
    if not out.get("expires_at") and user.get("expires_in") and user.get("issued_at"):
        out["expires_at"] = float(user["issued_at"]) + float(user["expires_in"])
    for k in ("client_id", "client_secret"):
        if credentials.get(k):
            out[k] = credentials[k]
    return out


@source(
    name="Slack",
    short_name="slack",
    mirrored_permissions=(("public channels: open to the organization", True),
                          ("private channels, group DMs and DMs: their members", True),
                          ("members without a visible e-mail address", False),
                          ("guests limited to their channels (they see public channels here)", False)),
    notifications=SlackNotifications,
    description="Messages and threads of Slack channels, synced into the collection or searched at query time.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_rotating_refresh",
    config_fields=(
        ConfigField("channels", "Channels", "array",
                    "Channel names (general or #general) or ids to sync; empty: every conversation the token can read.",
                    items_type="string"),
        ConfigField("include_private_channels", "Include private channels", "boolean",
                    "Sync the private channels the token is a member of (visible to their members only).",
                    default=True),
        ConfigField("include_direct_messages", "Include direct messages", "boolean",
                    "Sync DMs and group DMs of the token's user (visible to their members only).", default=False),
        ConfigField("thread_lookback_days", "Thread look-back (days)", "integer",
                    "Incremental runs re-read this many days to catch edits, new replies and deletions.", default=7),
        ConfigField("federated_search", "Search at query time", "boolean",
                    "Do not index messages: search Slack (search.messages, needs a user token with search:read) "
                    "each time the collection is searched.", default=False),
    ),
    labels=("Communication",),
    entity_types=(SlackChannelEntity, SlackMessageEntity),
    federated_search=True,
    supports_access_control=True,
    rate_limit_level="org",
    rate_limit="50/minute",
    base_url="https://slack.com/api",
)
class SlackSource(BaseSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        out["channels"] = list(dict.fromkeys(c.strip().lstrip("#") for c in out.get("channels") or [] if c.strip()))
        if out.get("thread_lookback_days", 7) < 0:
            raise ValueError("config field 'thread_lookback_days' must be 0 or more")
        return out

    @classmethod
    def federates(cls, config: dict | None) -> bool:
        return bool((config or {}).get("federated_search"))

    def http_auth(self):
        """The user token of the browser flow when there is one, else the connection's token."""
        if (self.credentials.get("authed_user") or {}).get("access_token"):
            from connectors.auth.tokens import _refresher_for

            parent = (self.context.credential_store if self.context else None) or MemoryCredentialStore(self.credentials)
            store = _UserTokenStore(parent)
            return OAuth2Auth(_user_token(self.credentials), store=store, refresher=_refresher_for(self))
        return default_auth_for(self)

    # --- the Web API ------------------------------------------------------------------------

    def _call(self, method: str, params: dict | None = None) -> dict:
        """GET one Web API method; return its body. Raises AuthFailure or SlackAPIError on `ok: false`."""
        refreshed = False
        while True:
            body = self.http.get_json(method, params=params or {})
            if body.get("ok"):
                return body
            code = str(body.get("error") or "unknown_error")
            if code == "token_expired" and not refreshed:
                refreshed = True
                refresh = getattr(self.http.auth, "refresh", None)
                if refresh is not None and self._refresh(refresh):
                    continue
            if code in _AUTH_ERRORS:
                needed = f" (needs {body['needed']})" if body.get("needed") else ""
                exc = AuthFailure(f"Slack {method} answered {code}{needed}; authenticate the source connection "
                                  f"again", _AUTH_ERRORS[code])
                if self.http.on_auth_failure is not None:
                    self.http.on_auth_failure(exc)
                raise exc
            raise SlackAPIError(method, code)

    def _refresh(self, refresh) -> bool:
        try:
            return bool(refresh())
        except AuthFailure as exc:
            if self.http.on_auth_failure is not None:
                self.http.on_auth_failure(exc)
            raise

    def _pages(self, method: str, key: str, params: dict) -> Iterator[list]:
        def fetch(cursor):
            body = self._call(method, {**params, **({"cursor": cursor} if cursor else {})})
            return body.get(key) or [], (body.get("response_metadata") or {}).get("next_cursor") or None

        return cursor_pages(fetch)

    # --- what every run needs ---------------------------------------------------------------

    def _workspace(self) -> dict:
        if getattr(self, "_team", None) is None:
            body = self._call("auth.test")
            self._team = {"id": body.get("team_id", ""), "name": body.get("team", ""),
                          "url": body.get("url") or "https://slack.com/", "user_id": body.get("user_id", "")}
        return self._team

    def _users(self) -> dict[str, dict]:
        if getattr(self, "_user_map", None) is None:
            users = {}
            for page in self._pages("users.list", "members", {"limit": PAGE_SIZE}):
                for user in page:
                    profile = user.get("profile") or {}
                    users[user["id"]] = {
                        "name": profile.get("display_name") or user.get("real_name") or profile.get("real_name")
                        or user.get("name") or user["id"],
                        "email": (profile.get("email") or "").strip().lower(),
                    }
            self._user_map = users
        return self._user_map

    def _types(self) -> str:
        types = ["public_channel"]
        if self.config.get("include_private_channels", True):
            types.append("private_channel")
        if self.config.get("include_direct_messages", False):
            types += ["mpim", "im"]
        return ",".join(types)

    def _conversations(self) -> list[dict]:
        """The conversations this connection covers (config `channels` applied), archived included."""
        if getattr(self, "_channel_list", None) is None:
            wanted = set(self.config.get("channels") or [])
            out = []
            for page in self._pages("conversations.list", "channels",
                                    {"types": self._types(), "exclude_archived": "false", "limit": PAGE_SIZE}):
                for channel in page:
                    if wanted and channel["id"] not in wanted and channel.get("name") not in wanted:
                        continue
                    out.append(channel)
            self._channel_list = out
        return self._channel_list

    def _channel_name(self, channel: dict) -> str:
        if channel.get("is_im"):
            return "DM with " + self._users().get(channel.get("user", ""), {}).get("name", channel.get("user", ""))
        return channel.get("name") or channel["id"]

    @staticmethod
    def _is_restricted(channel: dict) -> bool:
        return bool(channel.get("is_private") or channel.get("is_im") or channel.get("is_mpim")
                    or channel.get("is_group"))

    def _access(self, channel: dict) -> dict:
        if self._is_restricted(channel):
            return {"access_viewers": [f"group:{channel['id']}"], "access_is_public": False}
        return {"access_viewers": [], "access_is_public": True}

    # --- access ---------------------------------------------------------------------------------

    def generate_access_memberships(self) -> Iterable[AccessMembership]:
        """Members of every private conversation covered (`group:<channel id>` ∋ `user:<email>`)."""
        self._workspace()  # auth.test first: refused credentials fail fast, before any listing
        users = self._users()
        memberships = []
        for channel in self._conversations():
            if not self._is_restricted(channel):
                continue
            if channel.get("is_im"):
                members = [channel.get("user", "")] + ([self._me()] if self._me() else [])
            else:
                try:
                    members = [m for page in self._pages("conversations.members", "members",
                                                         {"channel": channel["id"], "limit": PAGE_SIZE})
                               for m in page]
                except SlackAPIError as exc:
                    if exc.code in _UNREADABLE:
                        continue  # no listed members: the channel's entities stay closed
                    raise
            for member in dict.fromkeys(members):
                email = users.get(member, {}).get("email")
                if email:
                    memberships.append(AccessMembership(channel["id"], f"user:{email}"))
        return memberships

    def _me(self) -> str:
        return self._workspace()["user_id"]

    # --- sync -----------------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = (cursor or {}).get("channels") or {}
        self._state: dict[str, dict] = {}
        self._deleted: list[str] = []
        team = self._workspace()
        if self.federates(self.config):
            # Federated: the run checks the token and refreshes the private members (before this).
            # An empty full listing: a forced full sync removes messages synced before the switch.
            self._incremental = False
            return
        self._incremental = bool(previous)
        lookback = float(self.config.get("thread_lookback_days", 7)) * 86400
        listed = set()
        for channel in self._conversations():
            listed.add(channel["id"])
            yield self._channel_entity(team, channel)
            before = previous.get(channel["id"])
            yield from self._channel_messages(team, channel, before, lookback)
        for channel_id, state in previous.items():  # conversations gone (deleted, left, filtered out)
            if channel_id not in listed:
                self._deleted.append(channel_id)
                self._deleted += [f"{channel_id}:{ts}" for _, ts in state.get("recent") or []]

    def _channel_entity(self, team: dict, channel: dict) -> SlackChannelEntity:
        name = self._channel_name(channel)
        return SlackChannelEntity(
            entity_id=channel["id"], name=name,
            breadcrumbs=[Breadcrumb(team["id"], team["name"], "SlackWorkspace")],
            created_at=ts_datetime(str(channel["created"])) if channel.get("created") else None,
            web_url=f"{team['url'].rstrip('/')}/archives/{channel['id']}",
            topic=(channel.get("topic") or {}).get("value", ""), purpose=(channel.get("purpose") or {}).get("value", ""),
            is_private=self._is_restricted(channel), is_archived=bool(channel.get("is_archived")),
            member_count=channel.get("num_members") or 0,
            raw_source_fields={"is_private": bool(channel.get("is_private")), "is_im": bool(channel.get("is_im")),
                               "is_mpim": bool(channel.get("is_mpim")), "is_archived": bool(channel.get("is_archived"))},
            **self._access(channel),
        )

    def _channel_messages(self, team: dict, channel: dict, before: dict | None, lookback: float) -> Iterator[BaseEntity]:
        channel_id = channel["id"]
        latest = (before or {}).get("latest")
        oldest = f"{max(0.0, float(latest) - lookback):.6f}" if latest else None
        state = {"latest": latest, "recent": []}
        self._state[channel_id] = state
        seen: set[str] = set()
        params = {"channel": channel_id, "limit": PAGE_SIZE, **({"oldest": oldest} if oldest else {})}
        try:
            for page in self._pages("conversations.history", "messages", params):
                for message in page:
                    yield from self._thread_or_message(team, channel, message, oldest, state, seen)
        except SlackAPIError as exc:
            if exc.code not in _UNREADABLE:
                raise
            state["recent"] = (before or {}).get("recent") or []
            return  # the token cannot read this conversation (a bot not invited): its channel entity only
        if oldest:  # what was seen in the re-read window last time and is gone now was deleted
            for thread_ts, ts in (before or {}).get("recent") or []:
                if float(thread_ts) >= float(oldest) and f"{channel_id}:{ts}" not in seen:
                    self._deleted.append(f"{channel_id}:{ts}")
        window_start = float(state["latest"] or 0) - lookback
        state["recent"] = [r for r in state["recent"] if float(r[0]) >= window_start][-RECENT_MAX_PER_CHANNEL:]

    def _thread_or_message(self, team, channel, message, oldest, state, seen) -> Iterator[BaseEntity]:
        thread_ts = message.get("thread_ts")
        is_parent = thread_ts == message.get("ts") and (message.get("reply_count") or 0) > 0
        if message.get("subtype") != "thread_broadcast" or not is_parent:
            yield from self._message(team, channel, message, state, seen)
        if is_parent and (not oldest or float(message.get("latest_reply") or thread_ts) >= float(oldest)):
            replies = self._pages("conversations.replies", "messages",
                                  {"channel": channel["id"], "ts": thread_ts, "limit": PAGE_SIZE})
            for page in replies:
                for reply in page:
                    if reply.get("ts") != thread_ts:
                        yield from self._message(team, channel, reply, state, seen, parent=message)

    def _message(self, team, channel, message, state, seen, parent: dict | None = None) -> Iterator[BaseEntity]:
        ts = message.get("ts")
        if not ts or message.get("subtype") in _SKIPPED_SUBTYPES:
            return
        channel_id = channel["id"]
        entity_id = f"{channel_id}:{ts}"
        thread_ts = message.get("thread_ts") or ""
        if state["latest"] is None or float(ts) > float(state["latest"]):
            state["latest"] = ts
        state["recent"].append([thread_ts or ts if parent is None else parent["ts"], ts])
        if message.get("subtype") == "tombstone":  # a deleted parent that keeps its replies
            self._deleted.append(entity_id)
            return
        if entity_id in seen:  # a thread_broadcast reply is listed in history and in its thread
            return
        seen.add(entity_id)
        yield self.message_entity(team, channel, message, parent=parent)

    def message_entity(self, team: dict, channel: dict, message: dict, parent: dict | None = None) -> SlackMessageEntity:
        """One Slack message object (history, replies or a search match) as an entity."""
        users = self._users()
        channel_name = self._channel_name(channel)
        user_id = message.get("user") or message.get("bot_id") or ""
        author = (users.get(message.get("user", ""), {}).get("name") or (message.get("user_profile") or {})
                  .get("real_name") or message.get("username") or (message.get("bot_profile") or {}).get("name")
                  or user_id)
        text = self.readable(message.get("text") or "")
        ts, thread_ts = message["ts"], message.get("thread_ts") or ""
        breadcrumbs = [Breadcrumb(team["id"], team["name"], "SlackWorkspace"),
                       Breadcrumb(channel["id"], channel_name, "SlackChannelEntity")]
        if parent is not None:
            breadcrumbs.append(Breadcrumb(f"{channel['id']}:{parent['ts']}",
                                          _snippet(self.readable(parent.get("text") or "")) or "Thread",
                                          "SlackMessageEntity"))
        files = [f.get("title") or f.get("name") or "" for f in message.get("files") or []]
        edited = (message.get("edited") or {}).get("ts")
        return SlackMessageEntity(
            entity_id=f"{channel['id']}:{ts}", name=_snippet(text) or f"Message in #{channel_name}",
            breadcrumbs=breadcrumbs, created_at=ts_datetime(ts), updated_at=ts_datetime(edited or ts),
            web_url=message.get("permalink") or permalink(team["url"], channel["id"], ts, thread_ts),
            channel_id=channel["id"], channel_name=channel_name, ts=ts, thread_ts=thread_ts, author=author,
            author_id=user_id, text=text, reply_count=message.get("reply_count") or 0, files=[f for f in files if f],
            raw_source_fields={"channel_id": channel["id"], "channel_name": channel_name, "user_id": user_id,
                               "author": author, "thread_ts": thread_ts or None, "subtype": message.get("subtype"),
                               "is_reply": bool(parent is not None), "edited": bool(edited),
                               "file_names": [f for f in files if f]},
            **self._access(channel),
        )

    def readable(self, text: str) -> str:
        """Slack mrkdwn with ids resolved: `<@U1>` → `@Name`, `<#C1|general>` → `#general`, links kept."""
        users = self._users()

        def mention(m: re.Match) -> str:
            kind, target, label = m.group(1), m.group(2), m.group(3)
            if kind == "@":
                return "@" + (label or users.get(target, {}).get("name") or target)
            if kind == "#":
                return "#" + (label or target)
            return "@" + (label or target.split("^")[0])  # <!here>, <!channel>, <!subteam^S1|@team>

        text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
        return _MENTION.sub(mention, text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")

    def is_full_listing(self) -> bool:
        return not self._incremental

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        if self.federates(self.config):
            return {}
        return {"channels": {cid: s for cid, s in self._state.items() if s.get("latest")}}

    # --- federated search -------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[dict]:
        """Ask `search.messages` for `query`; return up to `limit` hits (at most 300), best first.

        Each hit is a pipeline-shaped result: `entity_id` (`<channel id>:<ts>`, the id a synced
        message would have), `name`, `textual_representation`, `breadcrumbs`, `created_at`,
        `updated_at`, `web_url` (Slack's permalink), `system_metadata`, `source_fields`, and
        `access` (public channels open; private channels, group DMs and DMs: `group:<channel id>`).
        DMs and group DMs are dropped unless `include_direct_messages`, private channels unless
        `include_private_channels`, and channels outside config `channels` when it is set.
        Raises AuthFailure / SlackAPIError / connectors.http errors: the search goes on without Slack.
        """
        if getattr(self, "_user_map", None) is None:
            self._user_map = {}  # no users.list per query: authors come from the matches' `username`
        wanted = set(self.config.get("channels") or [])
        limit = max(1, min(int(limit), SEARCH_PAGE_MAX * SEARCH_MAX_PAGES))
        hits, page = [], 1
        while len(hits) < limit and page <= SEARCH_MAX_PAGES:
            body = self._call("search.messages", {"query": query, "count": min(SEARCH_PAGE_MAX, limit),
                                                  "page": page, "sort": "score", "highlight": "false"})
            block = body.get("messages") or {}
            for match in block.get("matches") or []:
                channel = match.get("channel") or {}
                if not channel.get("id") or not match.get("ts"):
                    continue
                if (channel.get("is_im") or channel.get("is_mpim")) and not self.config.get("include_direct_messages"):
                    continue
                if channel.get("is_private") and not self.config.get("include_private_channels", True):
                    continue
                if wanted and channel["id"] not in wanted and channel.get("name") not in wanted:
                    continue
                hits.append(self._hit(_team_of(match), channel, match))
            pages = int((block.get("paging") or {}).get("pages") or 1)
            if page >= pages:
                break
            page += 1
        return hits[:limit]

    def _hit(self, team: dict, channel: dict, match: dict) -> dict:
        if channel.get("is_im") and not channel.get("user"):
            channel = {**channel, "name": channel.get("name") or channel["id"]}
        entity = self.message_entity(team, channel, match)
        access = self._access(channel)
        return {
            "entity_id": entity.entity_id, "name": entity.name,
            "textual_representation": entity.textual_representation(),
            "created_at": entity.created_at.isoformat() if entity.created_at else None,
            "updated_at": entity.updated_at.isoformat() if entity.updated_at else None,
            "breadcrumbs": [b.as_dict() for b in entity.breadcrumbs],
            "system_metadata": {"source_name": self.short_name, "entity_type": SlackMessageEntity.entity_type(),
                                "original_entity_id": entity.entity_id, "chunk_index": 0,
                                "sync_id": None, "sync_job_id": None, "federated": True},
            "source_fields": entity.raw_source_fields,
            "web_url": entity.web_url,
            "access": {"viewers": access["access_viewers"], "is_public": access["access_is_public"]},
        }


def _team_of(match: dict) -> dict:
    """The workspace of a search match, from its permalink (no auth.test per query)."""
    link = match.get("permalink") or ""
    host = link.split("/")[2] if link.count("/") >= 3 else "slack.com"
    return {"id": match.get("team") or host, "name": host.split(".")[0], "url": f"https://{host}/"}


def _snippet(text: str, size: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= size else line[: size - 1].rstrip() + "…"
