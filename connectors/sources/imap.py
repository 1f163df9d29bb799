"""IMAP: mailboxes of a mail server, read with the stdlib `imaplib` (IMAP4rev1, RFC 3501).

Config: `host`, `port` (993 by default), `security` ("ssl" = implicit TLS, "starttls", or
"none" for a server on this machine), `verify_tls`, `mailboxes` (default INBOX; names as the
server lists them). Credentials: `username`, `password` (a secret, encrypted at rest).

Entities are those of the other mail sources (`connectors.sources.mail`): EmailEntity per
message, EmailAttachmentEntity per readable attachment; ids from the Message-ID, so a message
keeps its id when it is moved or re-appended. `web_url` is the message's RFC 5092 IMAP URL.

Incremental by UID: the cursor keeps, per mailbox, its UIDVALIDITY and the highest UID read.
The first run (and a forced full sync) fetches everything and is a full listing. Later runs
fetch only UIDs above the cursor (a mailbox whose UIDVALIDITY changed, or that is new in the
config, is fetched whole), then list the Message-IDs of every message still there (headers
only, cheap) so that expunged messages and their attachments are deleted. A message edited by
a client (a draft replaced: new UID, same Message-ID) is re-read and updated.
Messages larger than AIRWEAVE_MAX_FILE_BYTES are skipped with their size.
"""
from __future__ import annotations

import imaplib
import logging
import re
import socket
import ssl
from typing import Iterator
from urllib.parse import quote

from connectors.base import BaseEntity, BaseSource, ConfigField, SourceError, UnreadableEntity
from connectors.http.errors import BlockedAddress
from connectors.http.ssrf import check_host, resolve_allowed
from connectors.converters.mail import parse_message
from connectors.registry import source
from connectors.sources.mail import EmailAttachmentEntity, EmailEntity, MailEntityBuilder, message_entity_id

logger = logging.getLogger(__name__)

FETCH_BATCH = 100
TIMEOUT_SECONDS = 60
_UID = re.compile(rb"UID (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_MSGID = re.compile(rb"<[^<>\s]+>")
_STATUS = re.compile(rb"UIDVALIDITY (\d+)")


def _max_bytes() -> int:
    from django.conf import settings

    return settings.AIRWEAVE_MAX_FILE_BYTES if settings.configured else 25 * 1024 * 1024


def _quote_mailbox(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@source(
    name="IMAP",
    short_name="imap",
    description="E-mail from an IMAP server (Dovecot, Fastmail, Gmail with an app password, Exchange): "
                "messages, threads and attachments, synced incrementally by UID.",
    auth_methods=("direct",),
    labels=("Email",),
    entity_types=(EmailEntity, EmailAttachmentEntity),
    supports_temporal_relevance=True,
    config_fields=(
        ConfigField("host", "Host", "string", "The IMAP server's host name, e.g. imap.fastmail.com.", required=True),
        ConfigField("port", "Port", "integer", "993 for implicit TLS, 143 for STARTTLS or plain.", default=993),
        ConfigField("security", "Security", "string", "ssl (implicit TLS), starttls, or none (only for a "
                    "server on a trusted network).", enum_values=("ssl", "starttls", "none"), default="ssl"),
        ConfigField("verify_tls", "Verify TLS certificate", "boolean", "Check the server's certificate "
                    "and host name (turn off only for a self-signed test server).", default=True),
        ConfigField("mailboxes", "Mailboxes", "array", "Mailboxes to read, as the server names them "
                    "(default: INBOX).", items_type="string", default=["INBOX"]),
    ),
    auth_fields=(
        ConfigField("username", "Username", "string", "The IMAP login.", required=True),
        ConfigField("password", "Password", "string", "The password or an app password.", required=True,
                    is_secret=True),
    ),
)
class ImapSource(BaseSource):
    """See the module docstring."""

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._cursor: dict = {}
        self._full = True
        self._present: set[str] | None = None

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        host = out["host"].strip()
        if not host or any(c.isspace() for c in host) or "/" in host:
            raise ValueError("config field 'host' must be a host name or address, e.g. imap.example.com")
        try:
            check_host(host)
        except BlockedAddress as exc:
            raise ValueError(f"config field 'host': {exc} (AIRWEAVE_ALLOW_PRIVATE_HOSTS allows it)") from None
        out["host"] = host
        if not 1 <= out["port"] <= 65535:
            raise ValueError("config field 'port' must be between 1 and 65535")
        boxes = [m.strip() for m in out.get("mailboxes") or [] if m.strip()]
        if not boxes:
            raise ValueError("config field 'mailboxes' must name at least one mailbox, e.g. [\"INBOX\"]")
        out["mailboxes"] = list(dict.fromkeys(boxes))
        return out

    # -- connection ---------------------------------------------------------------------

    def _connect(self) -> imaplib.IMAP4:
        host, port = self.config["host"], int(self.config.get("port") or 993)
        security = self.config.get("security") or "ssl"
        context = ssl.create_default_context()
        if not self.config.get("verify_tls", True):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        resolve_allowed(host, port)  # the SSRF guard: BlockedAddress for private addresses
        try:
            if security == "ssl":
                conn = imaplib.IMAP4_SSL(host, port, ssl_context=context, timeout=TIMEOUT_SECONDS)
            else:
                conn = imaplib.IMAP4(host, port, timeout=TIMEOUT_SECONDS)
                if security == "starttls":
                    conn.starttls(ssl_context=context)
        except (OSError, imaplib.IMAP4.error, ssl.SSLError) as exc:
            raise SourceError(f"cannot connect to IMAP server {host}:{port} ({security}): {exc}",
                              category="connection_error") from exc
        try:
            conn.login(self.credentials.get("username", ""), self.credentials.get("password", ""))
        except imaplib.IMAP4.error as exc:
            _logout(conn)
            raise SourceError(f"IMAP login refused for {self.credentials.get('username', '')!r}: "
                              f"{_text(exc)}", category="auth_error") from exc
        return conn

    # -- the contract -------------------------------------------------------------------

    def is_full_listing(self) -> bool:
        return self._full

    def next_cursor(self) -> dict:
        return {"mailboxes": self._cursor}

    def present_entity_ids(self) -> _PresentMessages | None:
        """The messages left in the mailboxes (after an incremental run); an attachment is
        present while its message is."""
        return None if self._present is None else _PresentMessages(self._present)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        """Fetch new messages of every configured mailbox; see the module docstring."""
        previous = (cursor or {}).get("mailboxes") or {}
        self._full = not previous
        self._present = None if self._full else set()
        self._cursor = {}
        builder = MailEntityBuilder(mailbox_id_prefix=f"imap:{self.config['host']}")
        conn = self._connect()
        try:
            for name in self.config.get("mailboxes") or ["INBOX"]:
                yield from self._mailbox(conn, name, previous.get(name) or {}, builder)
        except (OSError, imaplib.IMAP4.abort, socket.timeout) as exc:
            raise SourceError(f"IMAP connection lost: {exc}", category="connection_error") from exc
        finally:
            _logout(conn)

    def _mailbox(self, conn: imaplib.IMAP4, name: str, seen: dict, builder: MailEntityBuilder
                 ) -> Iterator[BaseEntity]:
        typ, data = conn.select(_quote_mailbox(name), readonly=True)
        if typ != "OK":
            raise SourceError(f"IMAP mailbox {name!r} cannot be opened: {_text(data)}", category="config_error")
        exists = int((data or [b"0"])[0] or 0)
        validity = self._uidvalidity(conn, name)
        last = int(seen.get("last_uid") or 0) if seen.get("uidvalidity") == validity else 0
        typ, data = conn.uid("SEARCH", None, f"UID {last + 1}:*" if last else "ALL")
        if typ != "OK":
            raise SourceError(f"IMAP search failed in {name!r}: {_text(data)}")
        uids = [int(u) for u in b" ".join(d for d in data if d).split() if int(u) > last]
        highest = max(uids, default=last)
        limit = _max_bytes()
        base_url = f"imap://{quote(self.config['host'])}/{quote(name)};UIDVALIDITY={validity}"
        for start in range(0, len(uids), FETCH_BATCH):
            batch = uids[start:start + FETCH_BATCH]
            sizes = self._fetch_sizes(conn, batch)
            small = [u for u in batch if sizes.get(u, 0) <= limit]
            for uid in batch:
                if sizes.get(uid, 0) > limit:
                    yield UnreadableEntity(entity_id=f"unreadable:{name}/{uid}", name=f"{name} UID {uid}",
                                           reason=f"message too large: {sizes[uid]} bytes > limit {limit} bytes")
            for uid, raw in self._fetch_bodies(conn, small):
                yield from builder.entities(raw, name, f"{name} UID {uid}", web_url=f"{base_url}/;UID={uid}",
                                            extra_fields={"uid": uid})
        self._cursor[name] = {"uidvalidity": validity, "last_uid": highest}
        if self._present is not None and exists:
            self._present |= self._message_ids(conn)

    def _uidvalidity(self, conn: imaplib.IMAP4, name: str) -> int:
        validity = conn.untagged_responses.get("UIDVALIDITY") or []
        if validity:
            return int(validity[-1])
        typ, data = conn.status(_quote_mailbox(name), "(UIDVALIDITY)")
        found = _STATUS.search(b" ".join(d for d in data if isinstance(d, bytes)))
        return int(found.group(1)) if found else 0

    def _fetch_sizes(self, conn: imaplib.IMAP4, uids: list[int]) -> dict[int, int]:
        if not uids:
            return {}
        typ, data = conn.uid("FETCH", ",".join(map(str, uids)), "(UID RFC822.SIZE)")
        out = {}
        for item in data or []:
            line = item[0] if isinstance(item, tuple) else item
            if isinstance(line, bytes):
                uid, size = _UID.search(line), _SIZE.search(line)
                if uid and size:
                    out[int(uid.group(1))] = int(size.group(1))
        return out

    def _fetch_bodies(self, conn: imaplib.IMAP4, uids: list[int]) -> Iterator[tuple[int, bytes]]:
        if not uids:
            return
        typ, data = conn.uid("FETCH", ",".join(map(str, uids)), "(UID BODY.PEEK[])")
        if typ != "OK":
            raise SourceError(f"IMAP fetch failed: {_text(data)}")
        for item in data or []:
            if isinstance(item, tuple) and len(item) == 2:
                uid = _UID.search(item[0])
                if uid:
                    yield int(uid.group(1)), item[1]

    def _message_ids(self, conn: imaplib.IMAP4) -> set[str]:
        """Entity ids of every message left in the selected mailbox (headers only; a message
        without a Message-ID is read whole to hash it)."""
        typ, data = conn.uid("FETCH", "1:*", "(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
        if typ != "OK":
            raise SourceError(f"IMAP fetch failed: {_text(data)}")
        out, missing = set(), []
        for item in data or []:
            if not (isinstance(item, tuple) and len(item) == 2):
                continue
            found = _MSGID.search(item[1] or b"")
            if found:
                out.add(found.group(0).decode("utf-8", "replace").strip("<>"))
            else:
                uid = _UID.search(item[0])
                if uid:
                    missing.append(int(uid.group(1)))
        for start in range(0, len(missing), FETCH_BATCH):
            for _, raw in self._fetch_bodies(conn, missing[start:start + FETCH_BATCH]):
                try:
                    out.add(message_entity_id(parse_message(raw), raw))
                except Exception:  # unparsable: it was skipped, never indexed
                    continue
        return out


class _PresentMessages(set):
    """Message entity ids; `in` also answers for their attachments (`<id>#attachment-<n>`)."""

    def __contains__(self, entity_id) -> bool:
        return super().__contains__(str(entity_id).split("#attachment-", 1)[0])


def _logout(conn: imaplib.IMAP4) -> None:
    try:
        conn.logout()
    except Exception:  # already closed
        pass


def _text(value) -> str:
    if isinstance(value, imaplib.IMAP4.error):
        value = value.args[0] if value.args else ""
    if isinstance(value, (list, tuple)):
        value = b" ".join(v for v in value if isinstance(v, bytes))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
