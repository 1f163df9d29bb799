"""Mattermost: the messages of the channels a Mattermost user or bot belongs to.

Config: `base_url` (the server; SSRF-guarded), `include_private` (private channels; default
false, because the entities are visible to the whole organization). Direct and group messages
are never indexed. Auth: a personal access token or a bot token (Integrations → Bot
Accounts), sent as `Authorization: Bearer <token>`; a refused token (401) marks the connection
`needs_reauth`.

API (v4): `GET /api/v4/users/me/teams`, `GET /api/v4/users/me/teams/{team id}/channels`, then per
channel `GET /api/v4/channels/{id}/posts?page=N&per_page=200` on a first run (paged until a page
is short) and `GET /api/v4/channels/{id}/posts?since=<ms>` afterwards, which answers every post
created, edited or deleted since then (a deleted one with `delete_at` set). Mattermost's 429
(with Retry-After, and `X-Ratelimit-Reset`) is the shared client's to wait out.

Entities: MattermostChannelEntity (`channel:{id}`; breadcrumb: the team), MattermostPostEntity
(`post:{id}`: the message with its author; breadcrumbs: team, channel, and the thread's root post
for a reply; `web_url` `<base>/<team name>/pl/<post id>`).

Incremental: cursor `{"since": {<channel id>: <newest update_at, epoch ms>}}`; deleted posts
(`delete_at` > 0) are reported deleted, so the run needs no full listing. A channel the user
left is deleted with its posts at the next forced full sync.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import SelfHostedSource, WatermarkSource, Watermarks, parse_time

PER_PAGE = 200


@dataclass
class MattermostChannelEntity(BaseEntity):
    """A channel: its name, purpose and header."""

    purpose: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\nMattermost channel\n\n{self.purpose}".strip()


@dataclass
class MattermostPostEntity(BaseEntity):
    """One message ("author: text")."""

    author: str = ""
    message: str = ""

    def textual_representation(self) -> str:
        return f"{self.author}: {self.message}".strip()


@source(
    name="Mattermost",
    short_name="mattermost",
    description="Messages of the Mattermost channels a user or bot belongs to.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("access_token", "Access token", "string", "A personal access token or bot token.",
                             required=True, is_secret=True),),
    config_fields=(
        ConfigField("base_url", "Server URL", "string", "e.g. https://chat.example.org", required=True),
        ConfigField("include_private", "Include private channels", "boolean", "Their messages become visible to "
                    "the whole organization.", default=False),
    ),
    labels=("Communication",),
    entity_types=(MattermostChannelEntity, MattermostPostEntity),
    rate_limit_level="connection",
    rate_limit="10/second",
)
class MattermostSource(WatermarkSource, SelfHostedSource):
    """Reads each channel's posts, then what changed since; see the module docstring."""

    URL_MUST_BE = "the server's http(s) URL, e.g. https://chat.example.org"

    def http_auth(self):
        return BearerAuth(self.credentials["access_token"])

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        kinds = {"O"} | ({"P"} if self.config.get("include_private") else set())
        self._users: dict[str, str] = {}
        for team in self.http.get_json("/api/v4/users/me/teams"):
            for channel in self.http.get_json(f"/api/v4/users/me/teams/{team['id']}/channels"):
                if channel.get("type") not in kinds:
                    continue
                team_crumb = Breadcrumb(f"team:{team['id']}", team.get("display_name") or team["name"], "team")
                yield MattermostChannelEntity(
                    entity_id=f"channel:{channel['id']}", name=channel.get("display_name") or channel["name"],
                    purpose="\n\n".join(p for p in (channel.get("purpose"), channel.get("header")) if p),
                    breadcrumbs=[team_crumb], web_url=f"{self.base_url}/{team['name']}/channels/{channel['name']}",
                    created_at=parse_time(channel.get("create_at")))
                yield from self._posts(team, channel, team_crumb)

    def _channel_posts(self, channel_id: str, since) -> Iterator[dict]:
        if since:
            body = self.http.get_json(f"/api/v4/channels/{channel_id}/posts", params={"since": since})
            yield from (body.get("posts") or {}).values()
            return
        page = 0
        while True:
            body = self.http.get_json(f"/api/v4/channels/{channel_id}/posts",
                                      params={"page": page, "per_page": PER_PAGE})
            posts = [body["posts"][i] for i in body.get("order") or [] if i in (body.get("posts") or {})]
            yield from posts
            if len(body.get("order") or []) < PER_PAGE:
                return
            page += 1

    def _author(self, user_id: str) -> str:
        if user_id and user_id not in self._users:
            user = self.http.get_json(f"/api/v4/users/{user_id}")
            full = " ".join(p for p in (user.get("first_name"), user.get("last_name")) if p)
            self._users[user_id] = full or user.get("username") or user_id
        return self._users.get(user_id, "")

    def _posts(self, team: dict, channel: dict, team_crumb: Breadcrumb) -> Iterator[MattermostPostEntity]:
        since = self._marks.since(channel["id"])
        channel_crumb = Breadcrumb(f"channel:{channel['id']}", channel.get("display_name") or channel["name"],
                                   "MattermostChannelEntity")
        for post in self._channel_posts(channel["id"], since):
            self._marks.advance(channel["id"], post.get("update_at"))
            if post.get("delete_at"):
                self._marks.delete(f"post:{post['id']}")
                continue
            if post.get("type"):  # system messages: joins, header changes
                continue
            crumbs = [team_crumb, channel_crumb]
            if post.get("root_id"):
                crumbs.append(Breadcrumb(f"post:{post['root_id']}", "thread", "MattermostPostEntity"))
            author = self._author(post.get("user_id", ""))
            yield MattermostPostEntity(
                entity_id=f"post:{post['id']}", name=(post.get("message") or "")[:80] or post["id"], author=author,
                message=post.get("message") or "", breadcrumbs=crumbs,
                created_at=parse_time(post.get("create_at")), updated_at=parse_time(post.get("update_at")),
                web_url=f"{self.base_url}/{team['name']}/pl/{post['id']}",
                raw_source_fields={"channel": channel.get("name"), "author": author, "root_id": post.get("root_id")})
