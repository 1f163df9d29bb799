"""E-mail messages (.eml, and every mail source): headers, body text, attachments.

`parse_message(raw) -> ParsedMail` reads one RFC 5322 message (bytes, or an already parsed
`email.message.Message`, as `mailbox` yields) with the stdlib `email` package and the
`policy.default` header decoding (RFC 2047 words, RFC 2231 file names). The body is the
first `text/plain` part that is not an attachment, else the first `text/html` part turned
into text by the HTML converter. Charsets come from the part's header; an unknown or wrong
charset falls back to the converters' deterministic text decoding. Attachments are kept as
bytes with their file name, for the sources to convert with `convert_bytes`.

`convert(data, path, max_bytes) -> Document` renders a `.eml` file: `Subject/From/To/Cc/Date`
lines, the body, then the attachment names; title = the subject.
"""
from __future__ import annotations

import email
import email.header
import email.policy
import email.utils
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.message import Message
from pathlib import Path

from connectors.errors import SkipEntity
from connectors.converters.html import convert as convert_html
from connectors.converters._common import Document, check_not_binary, clean_text, decode_text

EXTENSIONS = frozenset({".eml"})

_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|sv|antw|wg)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)
_LIST_TAG = re.compile(r"^\s*\[[^\]]{1,40}\]\s*")
_MSGID = re.compile(r"<[^<>\s]+>")
_ADDRESS = re.compile(r"^[^@\s|<>()]+@[^@\s|<>()]+$")
_COMMENT_NAME = re.compile(r"^(.*?)\s*\(([^()]+)\)\s*$")


@dataclass
class Attachment:
    """One attached file: its name (possibly made up from the content type), type and bytes."""

    file_name: str
    content_type: str
    data: bytes


@dataclass
class ParsedMail:
    """The parts of a message the sources index. Addresses are `Name <addr>` strings."""

    message_id: str                 # "<id@host>", or "" when the message has none
    subject: str
    sender: str
    sender_address: str             # lower-case address part of From ("" when absent)
    to: list[str] = field(default_factory=list)
    cc: list[str] = field(default_factory=list)
    date: datetime | None = None    # timezone-aware (UTC when the header had no zone)
    in_reply_to: str = ""
    references: list[str] = field(default_factory=list)
    body: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    headers: dict = field(default_factory=dict)   # a few list headers (List-Id, ...) as strings

    @property
    def thread_root_id(self) -> str:
        """The Message-ID of the thread's first message: the first of References, else
        In-Reply-To, else this message's own id ("" when there is none at all)."""
        if self.references:
            return self.references[0]
        return self.in_reply_to or self.message_id

    def render(self) -> str:
        """The message as text to index: header lines, the body, the attachment names."""
        lines = [f"Subject: {self.subject}" if self.subject else "", f"From: {self.sender}" if self.sender else ""]
        if self.to:
            lines.append("To: " + ", ".join(self.to))
        if self.cc:
            lines.append("Cc: " + ", ".join(self.cc))
        if self.date:
            lines.append(f"Date: {self.date.isoformat()}")
        text = "\n".join(line for line in lines if line) + "\n\n" + self.body.strip()
        if self.attachments:
            text += "\n\nAttachments: " + ", ".join(a.file_name for a in self.attachments)
        return clean_text(text).strip()


def normalize_subject(subject: str) -> str:
    """The subject without reply/forward prefixes and a leading list tag ("[R-pkg-devel]")."""
    s = " ".join((subject or "").split())
    for _ in range(3):
        before = s
        s = _REPLY_PREFIX.sub("", s)
        s = _LIST_TAG.sub("", s)
        if s == before:
            break
    return s.strip()


def parse_message(raw: bytes | Message) -> ParsedMail:
    """Parse one message. Raises SkipEntity("unreadable e-mail: ...") when nothing of it parses."""
    try:
        if isinstance(raw, (bytes, bytearray)):
            msg = email.message_from_bytes(bytes(raw), policy=email.policy.default)
        elif isinstance(raw, Message) and not isinstance(raw, email.message.EmailMessage):
            # mailbox yields compat32 messages: re-parse with the modern policy for decoding.
            msg = email.message_from_bytes(raw.as_bytes(), policy=email.policy.default)
        else:
            msg = raw
    except Exception as exc:  # the email package raises many types on broken input
        raise SkipEntity(f"unreadable e-mail: {type(exc).__name__}: {exc}") from exc

    sender_pairs = _addresses(msg, "from")
    sender = sender_pairs[0] if sender_pairs else ("", "")
    body, attachments = _body_and_attachments(msg)
    headers = {}
    for name in ("List-Id", "X-Mailing-List", "Mailing-List"):
        value = _header(msg, name)
        if value:
            headers[name] = value
    return ParsedMail(
        message_id=_first_msgid(_header(msg, "Message-ID")),
        subject=" ".join(_header(msg, "Subject").split()),
        sender=_format_address(*sender),
        sender_address=sender[1].lower(),
        to=[_format_address(n, a) for n, a in _addresses(msg, "to")],
        cc=[_format_address(n, a) for n, a in _addresses(msg, "cc")],
        date=_date(_header(msg, "Date")),
        in_reply_to=_first_msgid(_header(msg, "In-Reply-To")),
        references=_MSGID.findall(_header(msg, "References")),
        body=body,
        attachments=attachments,
        headers=headers,
    )


def convert(data: bytes, path: Path, max_bytes: int) -> Document:
    check_not_binary(data)
    mail = parse_message(data)
    if not (mail.subject or mail.sender or mail.message_id or mail.date):
        raise SkipEntity("unreadable e-mail: no message headers")
    fields = {"from": mail.sender, "to": mail.to, "message_id": mail.message_id,
              "date": mail.date.isoformat() if mail.date else None}
    return Document(text=mail.render(), title=mail.subject or None, fields=fields)


def _header(msg: Message, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # a malformed header the policy cannot parse
        value = None
        for key, raw in msg.raw_items() if hasattr(msg, "raw_items") else msg.items():
            if key.lower() == name.lower():
                value = str(raw)
                break
    return clean_text(str(value)) if value is not None else ""


def _addresses(msg: Message, name: str) -> list[tuple[str, str]]:
    values = _raw_values(msg, name)
    out = []
    for value in values:
        pairs = [(" ".join(n.split()), a.strip()) for n, a in email.utils.getaddresses([value])]
        pairs = [(n, a) for n, a in pairs if n or a]
        if pairs and all(_ADDRESS.match(a) for _, a in pairs):
            out.extend(pairs)
            continue
        # An obfuscated archive address ("jo @end|ng |rom ex@mp|e@com (Jo Doe)"): keep it as it is.
        value = " ".join(value.split())
        comment = _COMMENT_NAME.match(value)
        if comment:
            address = comment.group(1).strip()
            out.append((comment.group(2).strip(), address if _ADDRESS.match(address) else ""))
        elif value:
            out.append((value, ""))
    return out


def _raw_values(msg: Message, name: str) -> list[str]:
    """The header's values as sent, RFC 2047 words decoded (no structured parsing, which
    turns an unparsable address into "<>")."""
    items = msg.raw_items() if hasattr(msg, "raw_items") else msg.items()
    out = []
    for key, raw in items:
        if key.lower() != name:
            continue
        raw = " ".join(str(raw).split())
        try:
            out.append(str(email.header.make_header(email.header.decode_header(raw))))
        except Exception:  # a broken encoded word: keep the raw text
            out.append(raw)
    return out


def _format_address(name: str, address: str) -> str:
    if name and address:
        return f"{name} <{address}>"
    return name or address


def _first_msgid(value: str) -> str:
    found = _MSGID.search(value or "")
    if found:
        return found.group(0)
    value = (value or "").strip()
    return f"<{value}>" if value and " " not in value else ""


def _date(value: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def _part_text(part: Message) -> str:
    """The decoded text of a text/* part; the declared charset first, then the fallbacks."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if payload is None:
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    charset = part.get_content_charset()
    if charset:
        try:
            return payload.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        return decode_text(payload)
    except SkipEntity:
        return payload.decode("utf-8", "replace")


def _body_and_attachments(msg: Message) -> tuple[str, list[Attachment]]:
    plain: str | None = None
    rich: str | None = None
    attachments: list[Attachment] = []
    for part in msg.walk():
        if part.is_multipart():
            continue
        content_type = part.get_content_type()
        disposition = (part.get_content_disposition() or "").lower()
        try:
            file_name = part.get_filename()
        except Exception:
            file_name = None
        is_attachment = disposition == "attachment" or (file_name and not content_type.startswith("text/"))
        if not is_attachment and content_type == "text/plain" and plain is None:
            plain = _part_text(part)
            continue
        if not is_attachment and content_type == "text/html" and rich is None:
            rich = _part_text(part)
            continue
        if content_type == "message/rfc822" or not (is_attachment or file_name):
            continue
        try:
            data = part.get_payload(decode=True) or b""
        except Exception:
            continue
        name = " ".join(str(file_name or "").split()) or f"attachment-{len(attachments) + 1}"
        attachments.append(Attachment(file_name=name, content_type=content_type, data=data))
    if plain is not None and plain.strip():
        return clean_text(plain).strip(), attachments
    if rich:
        try:
            return convert_html(rich.encode("utf-8"), Path("body.html"), len(rich) * 4 + 1).text, attachments
        except SkipEntity:
            pass
    return clean_text(plain or "").strip(), attachments
