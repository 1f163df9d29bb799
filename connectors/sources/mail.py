"""Mail on disk: mbox files (one file, or a folder of them) and Maildir folders.

Every message becomes an EmailEntity and every attachment the converters can read an
EmailAttachmentEntity (other attachments are named in the message's text and fields only).
The same entities come from IMAP (`connectors.sources.imap`), built by `MailEntityBuilder`.

Ids and shape (shared by the three mail sources):
- EmailEntity: `entity_id` = the Message-ID without its angle brackets (the same message in
  two mailboxes is one entity), else `sha256:<hex>` of the raw message; name = the subject;
  breadcrumbs mailbox → thread, the thread being its first message (the first id of
  `References`, else `In-Reply-To`), named by the subject without `Re:` and list tags; a
  thread's first message has the mailbox only. `created_at`/`updated_at` = the Date header.
  `raw_source_fields`: mailbox, from, from_address, to, cc, subject, message_id, in_reply_to,
  thread_id, date, list_id, attachments.
- EmailAttachmentEntity: `entity_id` = `<message entity id>#attachment-<n>`; breadcrumbs
  mailbox → thread → message; content converted by `convert_bytes` from its file name.
- A message that does not parse is skipped with its reason.

mbox and Maildir runs are full listings: every run reads all messages, and the content hash
keeps unchanged ones (nothing is re-embedded); messages gone from the files are deleted.
"""
from __future__ import annotations

import hashlib
import logging
import mailbox
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from connectors.base import (BaseEntity, BaseSource, BlobEntity, Breadcrumb, ConfigField, SkipEntity,
                             SourceError, UnreadableEntity)
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.converters.mail import ParsedMail, normalize_subject, parse_message
from connectors.registry import source
from connectors.sources._export_files import validate_local_path

logger = logging.getLogger(__name__)


@dataclass
class EmailEntity(BaseEntity):
    """One e-mail message. `text` is the rendered message (headers, body, attachment names)."""

    mailbox: str = ""
    message_id: str = ""
    thread_id: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        if not self.text.strip():
            raise SkipEntity("empty: no text in message")
        return self.text


@dataclass
class EmailAttachmentEntity(BlobEntity):
    """A file attached to a message, converted like any file."""

    content_type: str = ""
    message_entity_id: str = ""


def message_entity_id(mail: ParsedMail, raw: bytes) -> str:
    """The Message-ID without brackets, else `sha256:<first 32 hex of the raw bytes' hash>`."""
    if mail.message_id:
        return mail.message_id.strip("<>")
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:32]


class MailEntityBuilder:
    """Turns raw messages of a named mailbox into entities (see the module docstring)."""

    def __init__(self, mailbox_id_prefix: str = "mailbox"):
        self.prefix = mailbox_id_prefix

    def mailbox_crumb(self, mailbox_name: str) -> Breadcrumb:
        return Breadcrumb(f"{self.prefix}:{mailbox_name}", mailbox_name, "EmailMailbox")

    def entities(self, raw: bytes, mailbox_name: str, location: str, web_url: str = "",
                 extra_fields: dict | None = None) -> Iterator[BaseEntity]:
        """The message and its attachments. `location` names the message for skip reasons."""
        try:
            mail = parse_message(raw)
        except SkipEntity as exc:
            yield UnreadableEntity(entity_id=f"unreadable:{location}", name=location, reason=exc.reason)
            return
        entity_id = message_entity_id(mail, raw)
        crumbs = [self.mailbox_crumb(mailbox_name)]
        root = mail.thread_root_id.strip("<>")
        thread_id = root or entity_id
        if root and root != entity_id:
            crumbs.append(Breadcrumb(root, normalize_subject(mail.subject) or root, "EmailEntity"))
        attachments = [a for a in mail.attachments]
        fields = {
            "mailbox": mailbox_name, "from": mail.sender, "from_address": mail.sender_address,
            "to": mail.to, "cc": mail.cc, "subject": mail.subject, "message_id": mail.message_id,
            "in_reply_to": mail.in_reply_to, "thread_id": thread_id,
            "date": mail.date.isoformat() if mail.date else None,
            "list_id": mail.headers.get("List-Id", ""),
            "attachments": [{"file_name": a.file_name, "content_type": a.content_type, "size_bytes": len(a.data)}
                            for a in attachments],
            **(extra_fields or {}),
        }
        yield EmailEntity(
            entity_id=entity_id, name=mail.subject or f"(no subject) from {mail.sender or 'unknown sender'}",
            breadcrumbs=crumbs, created_at=mail.date, updated_at=mail.date, web_url=web_url,
            raw_source_fields=fields, mailbox=mailbox_name, message_id=mail.message_id, thread_id=thread_id,
            text=mail.render(),
        )
        message_crumb = Breadcrumb(entity_id, mail.subject or entity_id, "EmailEntity")
        for n, attachment in enumerate(attachments, start=1):
            if Path(attachment.file_name).suffix.lower() not in SUPPORTED_EXTENSIONS:
                continue
            data = attachment.data
            yield EmailAttachmentEntity(
                entity_id=f"{entity_id}#attachment-{n}", name=attachment.file_name,
                breadcrumbs=[*crumbs, message_crumb], created_at=mail.date, updated_at=mail.date,
                web_url=web_url,
                raw_source_fields={"mailbox": mailbox_name, "file_name": attachment.file_name,
                                   "content_type": attachment.content_type, "size_bytes": len(data),
                                   "message_id": mail.message_id, "thread_id": thread_id},
                file_name=attachment.file_name, size=len(data), load=lambda data=data: data,
                content_type=attachment.content_type, message_entity_id=entity_id,
            )


def _looks_like_mbox(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(5) == b"From "
    except OSError:
        return False


@source(
    name="Mbox Archive",
    short_name="mbox",
    description="E-mail in mbox files (mail clients' exports, Google Takeout, mailing-list archives): "
                "messages, threads and attachments.",
    auth_methods=("direct",),
    labels=("Email",),
    entity_types=(EmailEntity, EmailAttachmentEntity),
    supports_temporal_relevance=True,
    config_fields=(
        ConfigField("path", "Path", "string", "An mbox file, or a folder whose mbox files are read (each file "
                    "is a mailbox named after it).", required=True),
    ),
)
class MboxSource(BaseSource):
    """See the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        path = validate_local_path(out["path"], for_api=for_api)
        if path.is_file() and not _looks_like_mbox(path):
            raise ValueError(f"config field 'path': {out['path']!r} is not an mbox file (it must start with 'From ')")
        out["path"] = str(path)
        return out

    def _files(self) -> list[Path]:
        root = Path(self.config["path"])
        if root.is_file():
            return [root]
        if not root.is_dir():
            raise SourceError(f"path does not exist: {root}", category="config_error")
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            files.extend(Path(folder) / n for n in sorted(names)
                         if not n.startswith(".") and _looks_like_mbox(Path(folder) / n))
        return files

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        root = Path(self.config["path"])
        builder = MailEntityBuilder()
        for path in self._files():
            name = path.stem if root.is_file() else path.relative_to(root).with_suffix("").as_posix()
            box = mailbox.mbox(path, create=False)
            try:
                for key in box.iterkeys():
                    try:
                        raw = box.get_bytes(key)
                    except (OSError, KeyError, ValueError) as exc:
                        yield UnreadableEntity(entity_id=f"unreadable:{name}#{key}", name=f"{name} #{key}",
                                               reason=f"unreadable message: {exc}")
                        continue
                    yield from builder.entities(raw, name, f"{name} #{key}", web_url=path.as_uri())
            finally:
                box.close()


@source(
    name="Maildir",
    short_name="maildir",
    description="E-mail in a Maildir folder (Dovecot, Postfix, mutt, offlineimap, mbsync), its "
                "subfolders included: messages, threads and attachments.",
    auth_methods=("direct",),
    labels=("Email",),
    entity_types=(EmailEntity, EmailAttachmentEntity),
    supports_temporal_relevance=True,
    config_fields=(
        ConfigField("path", "Path", "string", "The Maildir folder (the one holding cur/, new/ and tmp/).",
                    required=True),
        ConfigField("folders", "Folders", "array", "Maildir++ subfolders to read besides the top one, "
                    "e.g. Sent (default: all).", items_type="string"),
    ),
)
class MaildirSource(BaseSource):
    """See the module docstring. The top folder is the mailbox `INBOX`."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        path = validate_local_path(out["path"], for_api=for_api)
        if not all((path / sub).is_dir() for sub in ("cur", "new")):
            raise ValueError(f"config field 'path': {out['path']!r} is not a Maildir (no cur/ and new/ folders)")
        out["path"] = str(path)
        return out

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        root = Path(self.config["path"])
        if not (root / "cur").is_dir():
            raise SourceError(f"not a Maildir: {root}", category="config_error")
        top = mailbox.Maildir(root, factory=None, create=False)
        wanted = self.config.get("folders")
        boxes = [("INBOX", top)]
        for name in sorted(top.list_folders()):
            if wanted is None or name in wanted:
                boxes.append((name, top.get_folder(name)))
        builder = MailEntityBuilder()
        for name, box in boxes:
            for key in sorted(box.iterkeys()):
                try:
                    raw = box.get_bytes(key)
                except (OSError, KeyError) as exc:
                    yield UnreadableEntity(entity_id=f"unreadable:{name}/{key}", name=key,
                                           reason=f"unreadable message: {exc}")
                    continue
                yield from builder.entities(raw, name, f"{name}/{key}")
