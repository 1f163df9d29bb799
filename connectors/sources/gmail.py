"""Gmail: the messages of a mailbox, with their attachments.

Auth: OAuth 2 with refresh (`gmail.readonly`). API: Gmail v1, `users/me`.

- Listing: `GET messages` (`q` = the `query` config, spam and trash left out) paginated by
  `pageToken`, then `GET messages/{id}?format=raw` for each: the RFC 5322 message is parsed by
  the mail converter (`connectors.converters.mail.parse_message`, the parser of every mail
  source: charsets, RFC 2047/2231 headers, plain body or HTML turned into text, attachments).
- Entities are the mail sources' own (`connectors.sources.mail`): EmailEntity, `entity_id` =
  the Gmail message id (Gmail's deletion feed names messages by it), and EmailAttachmentEntity
  for attachments a converter reads (`<message id>#attachment-<n>`; other attachments are
  named in the message's text). Breadcrumbs: the mailbox, then the thread (Gmail's `threadId`
  is the id of the thread's first message) for replies. Labels (user labels by name, system
  labels by id, UNREAD left out since it changes on every read) are `raw_source_fields.labels`.
- Incremental: the first run reads the mailbox's `historyId` from `profile` *before* listing;
  later runs read `history` from it: added messages and label changes are fetched again,
  `messagesDeleted` (and messages moved to TRASH or SPAM) become deletions, with their
  attachments (n ≤ MAX_ATTACHMENTS). A history id Gmail no longer has (HTTP 404) starts a
  full listing. With a `query`, every run is a full listing: history cannot be filtered by a
  Gmail query.
- Access (`supports_access_control`): a message and its attachments are visible to the
  mailbox owner and to the addresses of its From, To and Cc headers (people who received it
  anyway); a draft (label DRAFT: Gmail lists drafts among the messages) to the owner alone, as
  its recipients have not received it; an organization-wide caller sees everything.

Cursor: `{"history_id": "...", "query": "..."}`.
"""
from __future__ import annotations

import base64
import email.utils
import logging
from pathlib import Path
from typing import Iterator

from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, SkipEntity, UnreadableEntity
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.converters.mail import normalize_subject, parse_message
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._google import epoch_ms_time, google_json
from connectors.sources.mail import EmailAttachmentEntity, EmailEntity

logger = logging.getLogger(__name__)

MAX_ATTACHMENTS = 100
HIDDEN_LABELS = frozenset({"UNREAD"})
GONE_LABELS = frozenset({"TRASH", "SPAM"})
DRAFT_LABEL = "DRAFT"  # not sent: only the mailbox owner has it


@source(
    name="Gmail",
    short_name="gmail",
    mirrored_permissions=(("the mailbox owner", True), ("the From, To and Cc addresses of each message", True),
                          ("drafts: the mailbox owner only", True),
                          ("Bcc recipients and delegated mailbox access", False)),
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
    entity_types=(EmailEntity, EmailAttachmentEntity),
    # Gmail: 250 quota units a second per user; messages.get costs 5, so 50 gets a second.
    rate_limit_level="connection",
    rate_limit="40/second",
    base_url="https://gmail.googleapis.com/gmail/v1/users/me",
)
class GmailSource(BaseSource):
    """Lists messages and attachments of the mailbox; see the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
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
        self._deleted.extend(f"{message_id}#attachment-{n}" for n in range(1, MAX_ATTACHMENTS + 1))

    # --- one message ---------------------------------------------------------------------

    def _message(self, message_id: str) -> Iterator[BaseEntity]:
        try:
            message = google_json(self, f"messages/{message_id}", params={"format": "raw"})
        except HttpError as exc:
            if exc.status == 404:  # deleted between the listing and now
                self._delete(message_id)
                return
            raise
        label_ids = message.get("labelIds") or []
        if GONE_LABELS & set(label_ids):
            self._delete(message_id)
            return
        raw = _b64(message.get("raw") or "")
        try:
            mail = parse_message(raw)
        except SkipEntity as exc:
            yield UnreadableEntity(entity_id=message_id, name=message_id, reason=exc.reason)
            return
        thread_id = message.get("threadId") or message_id
        subject = mail.subject or f"(no subject) from {mail.sender or 'unknown sender'}"
        crumbs = [Breadcrumb(f"gmail:{self._me}", self._me or "Gmail", "EmailMailbox")]
        if thread_id != message_id:
            crumbs.append(Breadcrumb(thread_id, normalize_subject(mail.subject) or thread_id, "EmailEntity"))
        participants = set() if DRAFT_LABEL in label_ids else {
            a.lower() for _, a in email.utils.getaddresses([mail.sender, *mail.to, *mail.cc]) if "@" in a}
        viewers = sorted(f"user:{a}" for a in participants | ({self._me} if self._me else set()))
        labels = [self._labels.get(i, i) for i in label_ids if i not in HIDDEN_LABELS]
        sent = mail.date or epoch_ms_time(message.get("internalDate"))
        web_url = f"https://mail.google.com/mail/u/0/#all/{message_id}"
        yield EmailEntity(
            entity_id=message_id, name=subject, breadcrumbs=crumbs, created_at=sent, updated_at=sent, web_url=web_url,
            mailbox=self._me, message_id=mail.message_id, thread_id=thread_id, text=mail.render(),
            access_viewers=viewers, access_is_public=False,
            raw_source_fields={
                "mailbox": self._me, "from": mail.sender, "from_address": mail.sender_address, "to": mail.to,
                "cc": mail.cc, "subject": mail.subject, "message_id": mail.message_id,
                "in_reply_to": mail.in_reply_to, "thread_id": thread_id, "labels": labels,
                "date": sent.isoformat() if sent else None, "list_id": mail.headers.get("List-Id", ""),
                "attachments": [{"file_name": a.file_name, "content_type": a.content_type, "size_bytes": len(a.data)}
                                for a in mail.attachments]},
        )
        if not self.config.get("include_attachments", True):
            return
        message_crumb = Breadcrumb(message_id, subject, "EmailEntity")
        for n, attachment in enumerate(mail.attachments[:MAX_ATTACHMENTS], start=1):
            if Path(attachment.file_name).suffix.lower() not in SUPPORTED_EXTENSIONS:
                continue
            data = attachment.data
            yield EmailAttachmentEntity(
                entity_id=f"{message_id}#attachment-{n}", name=attachment.file_name,
                breadcrumbs=[*crumbs, message_crumb], created_at=sent, updated_at=sent, web_url=web_url,
                access_viewers=viewers, access_is_public=False,
                raw_source_fields={"mailbox": self._me, "file_name": attachment.file_name,
                                   "content_type": attachment.content_type, "size_bytes": len(data),
                                   "message_id": mail.message_id, "thread_id": thread_id, "labels": labels},
                file_name=attachment.file_name, size=len(data), load=lambda data=data: data,
                content_type=attachment.content_type, message_entity_id=message_id,
            )

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


def _b64(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
