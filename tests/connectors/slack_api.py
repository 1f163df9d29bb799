"""A Slack Web API built from the real workspace export in ../shared/data/slack_export_olake.

The export holds real Slack objects (users.list members, conversations, message objects with
threads, edits, blocks, files). This module serves them in the Web API's own envelopes through
`responses`: `{"ok": true, <key>: [...], "response_metadata": {"next_cursor": "..."}}`, pages
split by opaque cursors, `conversations.history` newest first with thread parents carrying
`reply_count`/`latest_reply`, `conversations.replies` as the parent followed by its replies.

The export has no e-mail addresses (pseudonymised); users get `<name>@olake.example`, as
users.list returns `profile.email` with the `users:read.email` scope.
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache

import responses
from responses import matchers

from tests.conftest import SHARED_DATA

EXPORT = SHARED_DATA / "slack_export_olake" / "export"
API = "https://slack.com/api"
TEAM = {"id": "T0820LGJGRF", "name": "OLake", "url": "https://olake-community.slack.com/"}
ME = "U0817E9CGRM"  # the token's user (the workspace creator in the export)


@lru_cache(maxsize=None)
def _users() -> tuple:
    users = json.loads((EXPORT / "users.json").read_text())
    for user in users:
        if not user.get("is_bot") and user["id"] != "USLACKBOT":
            user["profile"]["email"] = f"{user['name']}@olake.example"
    return tuple(users)


def users(emails: dict[str, str] | None = None) -> list[dict]:
    """users.list members; `emails` ({user id: address}) gives some of them another address."""
    out = copy.deepcopy(list(_users()))
    for user in out:
        if user["id"] in (emails or {}):
            user["profile"]["email"] = emails[user["id"]]
    return out


def email_of(user_id: str) -> str:
    return next(u["profile"].get("email", "") for u in _users() if u["id"] == user_id)


@lru_cache(maxsize=None)
def _channels() -> dict:
    return {c["name"]: c for c in json.loads((EXPORT / "channels.json").read_text())}


def channel(name: str, **changes) -> dict:
    """A conversations.list object of the export's channel `name` (its member list removed)."""
    out = copy.deepcopy(_channels()[name])
    out.pop("members", None)
    out.update({"is_channel": True, "is_member": True, **changes})
    return out


def members(name: str) -> list[str]:
    return list(_channels()[name]["members"])


def messages(name: str) -> list[dict]:
    """Every message object of channel `name` (parents and replies), oldest first."""
    out = []
    for day in sorted((EXPORT / name).glob("*.json")):
        out += json.loads(day.read_text())
    return sorted(out, key=lambda m: float(m["ts"]))


def history(name: str) -> list[dict]:
    """What conversations.history lists: top-level messages and broadcast replies, newest first."""
    msgs = messages(name)
    parents = {m["ts"] for m in msgs if m.get("reply_count")}
    top = [m for m in msgs if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"]
    top = [m for m in top if m.get("thread_ts") in (None, m["ts"]) or m["thread_ts"] in parents
           or m.get("subtype") == "thread_broadcast"]
    return list(reversed(top))


def threads(name: str) -> dict[str, list[dict]]:
    """thread ts → [parent, replies...] as conversations.replies answers them."""
    msgs = messages(name)
    out = {m["ts"]: [m] for m in msgs if m.get("reply_count")}
    for m in msgs:
        if m.get("thread_ts") and m["thread_ts"] != m["ts"] and m["thread_ts"] in out:
            out[m["thread_ts"]].append(m)
    return out


def ok(**body) -> dict:
    return {"ok": True, **body}


def add(rsps: responses.RequestsMock, method: str, params: dict, body: dict, **kwargs) -> None:
    """Answer GET /api/<method> with exactly these query parameters."""
    rsps.add("GET", f"{API}/{method}", json=body,
             match=[matchers.query_param_matcher({k: str(v) for k, v in params.items()})], **kwargs)


def add_pages(rsps, method: str, params: dict, key: str, items: list, pages: int = 1, **extra) -> None:
    """Serve `items` under `key` in `pages` pages linked by `response_metadata.next_cursor`."""
    size = max(1, -(-len(items) // pages))
    chunks = [items[i:i + size] for i in range(0, len(items), size)] or [[]]
    for n, chunk in enumerate(chunks):
        cursor = f"dGVhbTpD{method}{n}" if n else None
        following = f"dGVhbTpD{method}{n + 1}" if n + 1 < len(chunks) else ""
        body = ok(**{key: chunk}, **extra, response_metadata={"next_cursor": following})
        if method == "conversations.history":
            body["has_more"] = bool(following)
        add(rsps, method, {**params, **({"cursor": cursor} if cursor else {})}, body)


def add_workspace(rsps, conversations: dict[str, dict], *, types="public_channel,private_channel",
                  history_pages: int = 1, list_pages: int = 1, members_of=(), oldest: str | None = None,
                  auth_test: bool = True, emails: dict[str, str] | None = None) -> None:
    """Register a workspace whose conversations are `{export channel name: conversations.list object}`.

    Private conversations (`members_of`, export names) answer conversations.members. `oldest`
    is the parameter an incremental run sends to conversations.history. `emails` ({user id:
    address}) changes some users' addresses in users.list.
    """
    if auth_test:
        add(rsps, "auth.test", {}, ok(url=TEAM["url"], team=TEAM["name"], user="mullin", team_id=TEAM["id"],
                                       user_id=ME, is_enterprise_install=False))
    add_pages(rsps, "users.list", {"limit": 200}, "members", users(emails), pages=2, cache_ts=1785230728)
    add_pages(rsps, "conversations.list", {"types": types, "exclude_archived": "false", "limit": 200}, "channels",
              list(conversations.values()), pages=list_pages)
    for name in members_of:
        add_pages(rsps, "conversations.members", {"channel": conversations[name]["id"], "limit": 200}, "members",
                  members(name))
    for name, conv in conversations.items():
        params = {"channel": conv["id"], "limit": 200, **({"oldest": oldest} if oldest else {})}
        add_pages(rsps, "conversations.history", params, "messages", history(name), pages=history_pages,
                  pin_count=0)
        for ts, thread in threads(name).items():
            add_pages(rsps, "conversations.replies", {"channel": conv["id"], "ts": ts, "limit": 200}, "messages",
                      thread)


def search_match(name: str, message: dict, **channel_changes) -> dict:
    """A search.messages match for an export message of channel `name`."""
    conv = channel(name, **channel_changes)
    user = next((u for u in _users() if u["id"] == message.get("user")), {})
    return {
        "iid": f"{conv['id']}-{message['ts']}", "team": TEAM["id"], "type": "message",
        "channel": {"id": conv["id"], "is_channel": not conv.get("is_private"), "is_group": False, "is_im": False,
                    "is_mpim": False, "name": conv["name"], "is_shared": False, "is_org_shared": False,
                    "is_ext_shared": False, "is_private": bool(conv.get("is_private")), "pending_shared": [],
                    "is_pending_ext_shared": False},
        "user": message.get("user"), "username": user.get("name", ""), "ts": message["ts"],
        "blocks": message.get("blocks", []), "text": message["text"],
        "permalink": f"{TEAM['url']}archives/{conv['id']}/p{message['ts'].replace('.', '')}",
        "no_reactions": not message.get("reactions"),
    }


def search_body(query: str, matches: list[dict]) -> dict:
    total = len(matches)
    return ok(query=query, messages={
        "total": total, "matches": matches,
        "pagination": {"total_count": total, "page": 1, "per_page": 20, "page_count": 1, "first": 1, "last": total},
        "paging": {"count": 20, "total": total, "page": 1, "pages": 1},
    })
