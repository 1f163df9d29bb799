"""Outlook mail: the messages of the signed-in user's mailbox and their file attachments.

API (Microsoft Graph v1.0): the mail folders (`GET /me/mailFolders`, then each folder's
`childFolders` when `childFolderCount` > 0), and per folder a delta round of its messages
(`GET /me/mailFolders/{id}/messages/delta`, see connectors/sources/_msgraph.py) with
`Prefer: IdType="ImmutableId"` (ids survive moves between folders), `outlook.body-content-type="text"`
and `odata.maxpagesize=50`. Attachments: `GET /me/messages/{id}/attachments` for messages that
have any; file attachments are downloaded from `.../attachments/{id}/$value` when they must be
indexed (item and reference attachments, and inline images, are left out).

Entities: OutlookMessageEntity (`entity_id` = the immutable message id; breadcrumbs: the folder
path, e.g. Inbox → Projects; `web_url` = `webLink`) and OutlookAttachmentEntity (a file,
`<message id>/attachments/<attachment id>`; breadcrumbs: folders, then the message).

Cursor: `{"folders": {<folder id>: <delta link>}, "attachments": {<message id>: [<entity id>, ...]}}`.
The first run (or a forced full sync) is a full listing; later runs list changes, and a message
`@removed` from its folder is deleted with its attachments, unless the same run saw it in
another folder (a move). Read/unread flips re-list a message but do not re-index it
(`updated_at` is volatile).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.notifications.vendors import OutlookMailNotifications
from connectors.registry import source
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE, DeltaRound,
                                         GraphFileEntity, GraphSource, body_text, download_fetcher, email_address,
                                         graph_time, is_removed, pages)

MESSAGE_FIELDS = ("subject,from,toRecipients,ccRecipients,receivedDateTime,sentDateTime,createdDateTime,"
                  "lastModifiedDateTime,body,bodyPreview,hasAttachments,webLink,conversationId,internetMessageId,"
                  "importance,categories,parentFolderId")
DELTA_PREFER = 'IdType="ImmutableId", odata.maxpagesize=50, outlook.body-content-type="text"'


@dataclass
class OutlookMessageEntity(BaseEntity):
    """An e-mail message."""

    sender: str = ""
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)
    body: str = ""
    conversation_id: str = ""

    volatile_fields = ("updated_at",)  # a read/unread flip moves lastModifiedDateTime

    def textual_representation(self) -> str:
        head = [f"Subject: {self.name}", f"From: {self.sender}"]
        if self.to:
            head.append("To: " + ", ".join(self.to))
        if self.cc:
            head.append("Cc: " + ", ".join(self.cc))
        if self.created_at:
            head.append(f"Date: {self.created_at.isoformat()}")
        return "\n".join(head) + "\n\n" + self.body.strip()


class OutlookAttachmentEntity(GraphFileEntity):
    """A file attached to a message."""


@source(
    name="Outlook Mail",
    short_name="outlook_mail",
    notifications=OutlookMailNotifications,
    description="E-mail of your Outlook / Microsoft 365 mailbox with file attachments, kept fresh with delta queries.",
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(
        ConfigField("folders", "Folders", "array",
                    "Mail folder names to sync (e.g. Inbox, Sent Items); empty: every folder.", items_type="string"),
        ConfigField("include_attachments", "Include attachments", "boolean",
                    "Index file attachments (PDF, Word, ...) too.", default=True),
    ),
    labels=("Communication", "Email"),
    entity_types=(OutlookMessageEntity, OutlookAttachmentEntity),
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)
class OutlookMailSource(GraphSource):
    """See the module docstring."""

    def _folders(self) -> list[tuple[dict, list[Breadcrumb]]]:
        """Every mail folder with its breadcrumbs (ancestors then itself), depth first."""
        out = []

        def walk(url: str, crumbs: list[Breadcrumb]):
            for folder in pages(self.http, url, params={"$top": 100}):
                here = crumbs + [Breadcrumb(folder["id"], folder.get("displayName", ""), "OutlookMailFolder")]
                out.append((folder, here))
                if folder.get("childFolderCount"):
                    walk(f"/me/mailFolders/{folder['id']}/childFolders", here)

        walk("/me/mailFolders", [])
        wanted = {name.strip().lower() for name in self.config.get("folders") or []}
        if wanted:
            out = [(f, c) for f, c in out if f.get("displayName", "").lower() in wanted]
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        previous = cursor or {}
        links = previous.get("folders") or {}
        self._attachments: dict[str, list[str]] = dict(previous.get("attachments") or {})
        self._links: dict[str, str] = {}
        self._full = True
        removed: list[str] = []
        self._seen: set[str] = set()
        for folder, crumbs in self._folders():
            round_ = DeltaRound(self.http, f"/me/mailFolders/{folder['id']}/messages/delta",
                                params={"$select": MESSAGE_FIELDS}, delta_link=links.get(folder["id"]),
                                headers={"Prefer": DELTA_PREFER})
            for message in round_:
                if is_removed(message):
                    removed.append(message["id"])
                    continue
                self._seen.add(message["id"])
                yield self._message(message, crumbs)
                if self.config.get("include_attachments", True) and message.get("hasAttachments"):
                    yield from self._message_attachments(message, crumbs)
            self._full = self._full and round_.full
            if round_.delta_link:
                self._links[folder["id"]] = round_.delta_link
        # A message removed from one folder and seen in another was moved, not deleted.
        self._deleted = []
        for message_id in dict.fromkeys(removed):
            if message_id not in self._seen:
                self._deleted += [message_id, *self._attachments.pop(message_id, [])]

    def _message(self, message: dict, crumbs: list[Breadcrumb]) -> OutlookMessageEntity:
        text = body_text(message)
        sender = email_address(message.get("from"))
        return OutlookMessageEntity(
            entity_id=message["id"], name=message.get("subject") or "(no subject)", breadcrumbs=crumbs,
            created_at=graph_time(message.get("receivedDateTime") or message.get("createdDateTime")),
            updated_at=graph_time(message.get("lastModifiedDateTime")), web_url=message.get("webLink", ""),
            sender=sender, to=[email_address(r) for r in message.get("toRecipients") or []],
            cc=[email_address(r) for r in message.get("ccRecipients") or []], body=text,
            conversation_id=message.get("conversationId", ""),
            raw_source_fields={"from": sender, "to": [email_address(r) for r in message.get("toRecipients") or []],
                               "folder": crumbs[-1].name if crumbs else None,
                               "conversation_id": message.get("conversationId"),
                               "internet_message_id": message.get("internetMessageId"),
                               "importance": message.get("importance"), "categories": message.get("categories") or [],
                               "has_attachments": bool(message.get("hasAttachments")),
                               "sent_at": message.get("sentDateTime")},
        )

    def _message_attachments(self, message: dict, crumbs: list[Breadcrumb]) -> Iterator[BaseEntity]:
        ids = []
        url = f"/me/messages/{message['id']}/attachments"
        message_crumb = Breadcrumb(message["id"], message.get("subject") or "(no subject)", "OutlookMessageEntity")
        for attachment in pages(self.http, url, params={
                "$select": "id,name,contentType,size,isInline,lastModifiedDateTime"}):
            if attachment.get("@odata.type") != "#microsoft.graph.fileAttachment" or attachment.get("isInline"):
                continue
            entity_id = f"{message['id']}/attachments/{attachment['id']}"
            ids.append(entity_id)
            name = attachment.get("name") or "attachment"
            yield OutlookAttachmentEntity(
                entity_id=entity_id, name=name, breadcrumbs=crumbs + [message_crumb],
                created_at=graph_time(message.get("receivedDateTime")),
                updated_at=graph_time(attachment.get("lastModifiedDateTime")), web_url=message.get("webLink", ""),
                size=int(attachment.get("size") or 0), mime_type=attachment.get("contentType") or "",
                content_tag=f"{attachment['id']}:{attachment.get('lastModifiedDateTime', '')}",
                fetch=download_fetcher(self.http, f"{url}/{attachment['id']}/$value", name),
                raw_source_fields={"message_id": message["id"], "content_type": attachment.get("contentType"),
                                   "size": attachment.get("size"), "from": email_address(message.get("from"))},
            )
        if ids:
            self._attachments[message["id"]] = ids
        else:
            self._attachments.pop(message["id"], None)

    def is_full_listing(self) -> bool:
        return self._full

    def deleted_entity_ids(self) -> list[str]:
        return self._deleted

    def next_cursor(self) -> dict:
        return {"folders": self._links, "attachments": self._attachments}
