"""Gmail: the messages of a mailbox, with their attachments.

Auth: OAuth 2 with refresh (`gmail.readonly`). API: Gmail v1, `users/me`.

- Listing: `GET messages` (`q` = the `query` config, spam and trash left out) paginated by
  `pageToken`, then `GET messages/{id}?format=full` for each. The MIME tree of `payload` is read
  here: the text/plain parts are the body (text/html converted when there is no plain part),
  charsets from each part's Content-Type, RFC 2047 headers decoded (stdlib `email`). Parts with
  a file name are attachments, fetched with `messages/{id}/attachments/{attachmentId}` only when
  a converter reads their type and they are under AIRWEAVE_MAX_FILE_BYTES.
- Threads are breadcrumbs; labels (user labels by name, system labels by id, UNREAD left out
  since it changes on every read) are `raw_source_fields.labels`.
- Incremental: the first run reads the mailbox's `historyId` from `profile` *before* listing;
  later runs read `history` from it: added messages and label changes are fetched again,
  `messagesDeleted` (and messages moved to TRASH or SPAM) become deletions, with their
  attachments (`<message id>/attachment/<n>`, n < MAX_ATTACHMENTS). A history id Gmail no longer
  has (HTTP 404) starts a full listing. With a `query`, every run is a full listing: history
  cannot be filtered by a Gmail query.
- Access (`supports_access_control`): a message and its attachments are visible to the
  mailbox owner and to the addresses in its From, To, Cc and Bcc headers (people who received
  it anyway); an organization-wide caller sees everything.

Entities: GmailMessageEntity (`entity_id` = the Gmail message id) and GmailAttachmentEntity
(`<message id>/attachment/<n>`). Cursor: `{"history_id": "...", "query": "..."}`.
"""
from __future__ import annotations

import base64
import email.message
import email.utils
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from django.conf import settings

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity
from connectors.converters import convert_bytes
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._cloud_files import CloudFileEntity, FileFetcher, max_file_bytes, unsupported_reason
from connectors.sources._google import decode_mime_header, epoch_ms_time, google_json

logger = logging.getLogger(__name__)

MAX_ATTACHMENTS = 100
HIDDEN_LABELS = frozenset({"UNREAD"})
GONE_LABELS = frozenset({"TRASH", "SPAM"})
_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|wg|tr|sv|vs)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)


@dataclass
class GmailMessageEntity(BaseEntity):
    """One e-mail message."""

    thread_id: str = ""
    subject: str = ""
    sender: str = ""
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    body: str = ""

    def textual_representation(self) -> str:
        head = [f"Subject: {self.subject}", f"From: {self.sender}"]
        if self.to:
            head.append(f"To: {', '.join(self.to)}")
        if self.cc:
            head.append(f"Cc: {', '.join(self.cc)}")
        if self.created_at:
            head.append(f"Date: {self.created_at.isoformat()}")
        return "\n".join(head) + "\n\n" + self.body.strip()


@dataclass
class GmailAttachmentEntity(CloudFileEntity):
    """A file attached to an e-mail message."""

    message_id: str = ""


@source(
    name="Gmail",
    short_name="gmail",
    description="E-mail messages of a Gmail mailbox and their attachments, threads as breadcrumbs, labels as metadata.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("query", "Search query", "string",
                    "Gmail search syntax selecting the messages to index, e.g. 'newer_than:1y -category:promotions'. "
                    "With a query every sync lists all matching messages.", default=""),
        ConfigField("include_attachments", "Include attachments", "boolean",
                    "Index attachments that a converter reads (PDF, Office, text, ...).", default=True),
    ),
    labels=("Communication", "Email"),
    supports_access_control=True,
    entity_types=(GmailMessageEntity, GmailAttachmentEntity),
    # Gmail: 250 quota units a second per user; messages.get costs 5, so 50 gets a second.
    rate_limit_level="connection",
    rate_limit="40/second",
    base_url="https://gmail.googleapis.com/gmail/v1/users/me",
)
class GmailSource(BaseSource):
    """Lists messages and attachments of the mailbox; see the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._fetcher = FileFetcher(self.http)
        self._deleted: list[str] = []
        query = (self.config.get("query") or "").strip()
        cursor = cursor or {}
        profile = google_json(self, "profile")
        self._me = (profile.get("emailAddress") or "").lower()
        self._labels = {label["id"]: label.get("name") or label["id"]
                        for label in google_json(self, "labels").get("labels") or []}
        history_id = cursor.get("history_id")
        self._full = query != "" or not history_id or cursor.get("query", "") != query
        if not self._full:
            try:
                yield from self._history(history_id)
                return
            except _HistoryGone:
                logger.info("gmail: history %s is no longer available; listing every message", history_id)
                self._full = True
        self._history_id = profile.get("historyId")
        for message_id in self._message_ids(query):
            yield from self._message(message_id)

    # --- listing and history -------------------------------------------------------------

    def _message_ids(self, query: str) -> Iterator[str]:
        params = {"maxResults": 100, "includeSpamTrash": "false"}
        if query:
            params["q"] = query
        page_token, seen = None, set()
        while True:
            body = google_json(self, "messages", params={**params, **({"pageToken": page_token} if page_token else {})})
            for message in body.get("messages") or []:
                yield message["id"]
            page_token = body.get("nextPageToken")
            if not page_token or page_token in seen:
                return
            seen.add(page_token)

    def _history(self, start: str) -> Iterator[BaseEntity]:
        changed: dict[str, None] = {}
        deleted: set[str] = set()
        params = {"startHistoryId": start, "maxResults": 500,
                  "historyTypes": ["messageAdded", "messageDeleted", "labelAdded", "labelRemoved"]}
        page_token, seen, latest = None, set(), start
        while True:
            try:
                body = google_json(self, "history", params={**params, **({"pageToken": page_token} if page_token else {})})
            except HttpError as exc:
                if exc.status == 404:
                    raise _HistoryGone() from None
                raise
            latest = body.get("historyId") or latest
            for record in body.get("history") or []:
                for added in record.get("messagesAdded") or []:
                    changed[added["message"]["id"]] = None
                    deleted.discard(added["message"]["id"])
                for gone in record.get("messagesDeleted") or []:
                    deleted.add(gone["message"]["id"])
                    changed.pop(gone["message"]["id"], None)
                for key in ("labelsAdded", "labelsRemoved"):
                    for change in record.get(key) or []:
                        if change["message"]["id"] not in deleted:
                            changed[change["message"]["id"]] = None
            page_token = body.get("nextPageToken")
            if not page_token or page_token in seen:
                break
            seen.add(page_token)
        self._history_id = latest
        for message_id in deleted:
            self._delete(message_id)
        for message_id in changed:
            yield from self._message(message_id)

    def _delete(self, message_id: str) -> None:
        self._deleted.append(message_id)
        self._deleted.extend(f"{message_id}/attachment/{n}" for n in range(MAX_ATTACHMENTS))

    # --- one message ---------------------------------------------------------------------

    def _message(self, message_id: str) -> Iterator[BaseEntity]:
        try:
            message = google_json(self, f"messages/{message_id}", params={"format": "full"})
        except HttpError as exc:
            if exc.status == 404:  # deleted between the listing and now
                self._delete(message_id)
                return
            raise
        label_ids = message.get("labelIds") or []
        if GONE_LABELS & set(label_ids):
            self._delete(message_id)
            return
        payload = message.get("payload") or {}
        headers = _headers(payload)
        subject = decode_mime_header(headers.get("subject")) or "(no subject)"
        sender = decode_mime_header(headers.get("from"))
        to, cc, bcc = (_addresses(headers.get(h)) for h in ("to", "cc", "bcc"))
        plain, html, attachments = [], [], []
        _walk(payload, plain, html, attachments)
        body = "\n\n".join(plain).strip() or _html_text("\n".join(html))
        thread_id = message.get("threadId") or message_id
        thread = Breadcrumb(thread_id, _REPLY_PREFIX.sub("", subject) or subject, "GmailThread")
        participants = {a.lower() for a in [*_addresses(sender), *to, *cc, *bcc]}
        viewers = sorted({f"user:{a}" for a in participants | ({self._me} if self._me else set()) if "@" in a})
        labels = [self._labels.get(i, i) for i in label_ids if i not in HIDDEN_LABELS]
        sent = epoch_ms_time(message.get("internalDate"))
        web_url = f"https://mail.google.com/mail/u/0/#all/{message_id}"
        yield GmailMessageEntity(
            entity_id=message_id, name=subject, breadcrumbs=[thread], created_at=sent, updated_at=sent,
            web_url=web_url, thread_id=thread_id, subject=subject, sender=sender, to=to, cc=cc, labels=labels,
            body=body or message.get("snippet") or "", access_viewers=viewers, access_is_public=False,
            raw_source_fields={"thread_id": thread_id, "labels": labels, "from": sender, "to": to, "cc": cc,
                               "message_id_header": headers.get("message-id", ""),
                               "has_attachments": bool(attachments)},
        )
        if not self.config.get("include_attachments", True):
            return
        for n, part in enumerate(attachments[:MAX_ATTACHMENTS]):
            yield self._attachment(message_id, n, part, [thread, Breadcrumb(message_id, subject, "GmailMessageEntity")],
                                   sent, web_url, viewers)

    def _attachment(self, message_id: str, n: int, part: dict, breadcrumbs, sent, web_url, viewers):
        name = part.get("filename") or f"attachment-{n}"
        body = part.get("body") or {}
        size = int(body.get("size") or 0)
        path, reason = None, unsupported_reason(name)
        if reason is None and size > max_file_bytes():
            reason = f"file too large: {size} bytes > limit {max_file_bytes()} bytes"
        if reason is None:
            path, reason = self._attachment_file(message_id, n, name, body)
        return GmailAttachmentEntity(
            entity_id=f"{message_id}/attachment/{n}", name=name, breadcrumbs=breadcrumbs, created_at=sent,
            updated_at=sent, web_url=web_url, path=path, size=size, skip_reason=reason or "",
            mime_type=part.get("mimeType") or "", message_id=message_id, access_viewers=viewers,
            access_is_public=False,
            raw_source_fields={"message_id": message_id, "mime_type": part.get("mimeType") or "", "size": size},
        )

    def _attachment_file(self, message_id: str, n: int, name: str, body: dict) -> tuple[Path | None, str | None]:
        data = body.get("data")
        if data is None and body.get("attachmentId"):
            try:
                data = google_json(self, f"messages/{message_id}/attachments/{body['attachmentId']}").get("data")
            except HttpError as exc:
                if exc.status in (403, 404):
                    return None, f"download refused: HTTP {exc.status}"
                raise
        if data is None:
            return None, "empty: the attachment has no content"
        content = _b64(data)
        if len(content) > max_file_bytes():
            return None, f"file too large: {len(content)} bytes > limit {max_file_bytes()} bytes"
        path = self._fetcher.http.temp_dir / f"{message_id}-attachment-{n}{Path(name).suffix.lower()}"
        path.write_bytes(content)
        return self._fetcher.adopt(path), None

    # --- the contract --------------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        history_id = getattr(self, "_history_id", None)
        return {"history_id": str(history_id), "query": (self.config.get("query") or "").strip()} if history_id else {}


class _HistoryGone(Exception):
    """Gmail no longer has the saved history id."""


def _headers(part: dict) -> dict[str, str]:
    return {h["name"].lower(): h.get("value") or "" for h in part.get("headers") or [] if h.get("name")}


def _addresses(value: str | None) -> list[str]:
    if not value:
        return []
    return [address for _, address in email.utils.getaddresses([decode_mime_header(value)]) if address]


def _b64(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _part_text(part: dict) -> str:
    data = (part.get("body") or {}).get("data")
    if not data:
        return ""
    holder = email.message.Message()
    holder["Content-Type"] = _headers(part).get("content-type") or part.get("mimeType") or "text/plain"
    charset = holder.get_content_charset() or "utf-8"
    try:
        return _b64(data).decode(charset, errors="replace")
    except LookupError:  # an unknown charset name
        return _b64(data).decode("utf-8", errors="replace")


def _walk(part: dict, plain: list[str], html: list[str], attachments: list[dict]) -> None:
    """Collect the plain and HTML body texts and the attachment parts of a Gmail payload tree."""
    mime = (part.get("mimeType") or "").lower()
    body = part.get("body") or {}
    if part.get("filename") and (body.get("attachmentId") or body.get("data")):
        attachments.append(part)
        return
    if mime == "text/plain":
        plain.append(_part_text(part))
    elif mime == "text/html":
        html.append(_part_text(part))
    for child in part.get("parts") or []:
        _walk(child, plain, html, attachments)


def _html_text(markup: str) -> str:
    if not markup.strip():
        return ""
    try:
        return convert_bytes(markup.encode("utf-8"), Path("body.html"),
                             max_bytes=int(settings.AIRWEAVE_MAX_FILE_BYTES)).text
    except SkipEntity:
        return ""
