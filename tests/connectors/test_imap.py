"""The imap source against a real IMAP server (Dovecot) started for these tests.

Real messages of the Apache mailing-list archives are appended to the server, then synced over
IMAPS, STARTTLS and plain IMAP; edits and expunges go through IMAP too.
"""
from __future__ import annotations

import imaplib
import mailbox
import ssl

import pytest

from airweave.collections.models import Entity
from connectors.services import SourceConnectionError, source_connection_create
from connectors.sources.imap import ImapSource
from tests.conftest import SHARED_DATA
from tests.connectors.imap_server import DOVECOT, dovecot_server
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync

pytestmark = pytest.mark.skipif(DOVECOT is None, reason="Dovecot is not installed (apt-get install dovecot-imapd)")
APACHE = SHARED_DATA / "mbox_mailing_lists" / "apache_ponymail"
ROOT = "CAMHy98POmosR8B2YgZfGN-Tok64Zn9roTG98Yu3gRPQ_CT=Mpg@mail.gmail.com"


@pytest.fixture(autouse=True)
def _local_servers_allowed(settings):
    """The test server is local; the SSRF guard refuses it unless allowed (tested below)."""
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True


@pytest.fixture(scope="module")
def server():
    s = dovecot_server()
    yield s
    s.stop()


def client_of(server) -> imaplib.IMAP4:
    conn = imaplib.IMAP4(server.host, server.port)
    conn.login(server.user, server.password)
    return conn


@pytest.fixture
def mailboxes(server):
    """INBOX: the 6 messages of a real users@ponymail thread; Archive: the 5 attachment tests."""
    conn = client_of(server)
    for name in ("INBOX", "Archive"):
        conn.create(name)
        conn.select(name)
        conn.store("1:*", "+FLAGS", "\\Deleted") if int(conn.select(name)[1][0]) else None
        conn.expunge()
    for name, path in (("INBOX", "users_ponymail_apache_org_2022-01.mbox"), ("Archive", "attachments.mbox")):
        box = mailbox.mbox(APACHE / path, create=False)
        for key in box.keys():
            typ, _ = conn.append(name, None, None, box.get_bytes(key))
            assert typ == "OK"
    yield conn
    conn.logout()


def config(server, **extra):
    return {"host": server.host, "port": server.ssl_port, "security": "ssl", "verify_tls": False,
            "mailboxes": ["INBOX", "Archive"], **extra}


CREDENTIALS = {"username": "ana", "password": "secret"}


def _uid_of(conn, mailbox_name: str, message_id: str) -> bytes:
    conn.select(mailbox_name)
    typ, data = conn.uid("SEARCH", None, "HEADER", "Message-ID", message_id)
    return data[0].split()[0]


def _max_uid(conn, mailbox_name: str) -> int:
    conn.select(mailbox_name)
    typ, data = conn.uid("SEARCH", None, "ALL")
    return max(int(u) for u in data[0].split())


def test_lifecycle_over_imaps(server, mailboxes, make_collection, client):
    collection = make_collection(readable_id="imap")
    connection = connect(collection, "imap", config(server), CREDENTIALS)
    first = sync(connection)
    assert first.entities_inserted == 6 + 5 + 2 and first.entities_skipped == 1  # the empty attachment
    assert connection.sync.cursor.data["mailboxes"]["INBOX"]["last_uid"] == _max_uid(mailboxes, "INBOX")
    root = Entity.objects.get(source_connection=connection, entity_id=ROOT)
    root_uid = _uid_of(mailboxes, "INBOX", f"<{ROOT}>").decode()
    assert root.web_url.startswith(f"imap://{server.host}/INBOX;UIDVALIDITY=")
    assert root.web_url.endswith(f";UID={root_uid}")
    assert root.breadcrumbs == [{"entity_id": f"imap:{server.host}:INBOX", "name": "INBOX",
                                 "entity_type": "EmailMailbox"}]
    assert ROOT in search_ids(client, collection, "search form linking to Ponymail without Javascript")

    # nothing new: the incremental run fetches nothing and keeps everything
    quiet = sync(connection)
    assert counts(quiet) == (0, 0, 0, 0) and quiet.entities_encountered == {}

    # a client replaces the message (new UID, same Message-ID), another message arrives
    conn = mailboxes
    old_uid = _uid_of(conn, "INBOX", f"<{ROOT}>")
    conn.append("INBOX", None, None, (
        f"From: Solana Miah <solana@example.com>\r\nTo: users@ponymail.apache.org\r\n"
        f"Subject: External search form\r\nMessage-ID: <{ROOT}>\r\nDate: Thu, 06 Jan 2022 10:00:00 +0000\r\n\r\n"
        "Could Ponymail offer a search widget for lighthouse keepers?\r\n").encode())
    conn.append("INBOX", None, None, (
        "From: Ana <ana@example.com>\r\nSubject: Harbour schedule\r\nMessage-ID: <harbour@example.com>\r\n"
        "Date: Fri, 07 Jan 2022 10:00:00 +0000\r\n\r\nThe ferry leaves the harbour at seven.\r\n").encode())
    conn.select("INBOX")
    conn.uid("STORE", old_uid, "+FLAGS", "(\\Deleted)")
    conn.expunge()
    second = sync(connection)
    assert (second.entities_inserted, second.entities_updated, second.entities_deleted) == (1, 1, 0)
    assert "lighthouse keepers" in entity_text(connection, ROOT)
    assert search_ids(client, collection, "search widget for lighthouse keepers")[0] == ROOT
    assert "harbour@example.com" in search_ids(client, collection, "when does the ferry leave the harbour")

    # expunge a message with an attachment: the message and its attachment are deleted
    with_attachment = "20161121171202.GA25827@minotaur.apache.org"
    uid = _uid_of(conn, "Archive", f"<{with_attachment}>")
    conn.uid("STORE", uid, "+FLAGS", "(\\Deleted)")
    conn.expunge()
    third = sync(connection)
    assert third.entities_deleted == 2
    assert not {with_attachment, f"{with_attachment}#attachment-1"} & entity_ids(connection)
    assert with_attachment not in search_ids(client, collection, "Test message with plain text attachment")

    # a forced full sync lists everything again and changes nothing
    full = sync(connection, force_full_sync=True)
    assert (full.entities_inserted, full.entities_updated, full.entities_deleted) == (0, 0, 0)


@pytest.mark.parametrize("security", ["starttls", "none"])
def test_starttls_and_plain(server, mailboxes, security):
    highest = _max_uid(mailboxes, "INBOX")
    source = ImapSource(ImapSource.validate_config(config(server, port=server.port, security=security,
                                                          mailboxes=["INBOX"])), CREDENTIALS)
    entities = list(source.generate_entities({}))
    assert len(entities) == 6 and source.is_full_listing()
    assert source.next_cursor()["mailboxes"]["INBOX"]["last_uid"] == highest


def test_certificate_is_verified_by_default(server, mailboxes):
    source = ImapSource(ImapSource.validate_config(config(server, verify_tls=True)), CREDENTIALS)
    with pytest.raises(Exception) as info:
        list(source.generate_entities({}))
    assert getattr(info.value, "category", "") == "connection_error"
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value) or isinstance(info.value.__cause__, ssl.SSLError)


def test_wrong_password_fails_the_job_with_auth_error(server, mailboxes, make_collection):
    connection = connect(make_collection(readable_id="imap-bad"), "imap", config(server),
                         {"username": "ana", "password": "wrong"})
    job = sync(connection, expect="failed")
    assert job.error_category == "auth_error" and "login refused" in job.error


def test_missing_mailbox_and_credentials_are_refused(server, mailboxes, make_collection):
    collection = make_collection(readable_id="imap-cfg")
    with pytest.raises(SourceConnectionError, match="credential field 'password' is required"):
        source_connection_create(collection=collection, short_name="imap", config=config(server),
                                 credentials={"username": "ana"}, sync_immediately=False)
    with pytest.raises(SourceConnectionError, match="security"):
        source_connection_create(collection=collection, short_name="imap",
                                 config=config(server, security="tls13"), credentials=CREDENTIALS,
                                 sync_immediately=False)
    connection = connect(collection, "imap", config(server, mailboxes=["Nope"]), CREDENTIALS)
    job = sync(connection, expect="failed")
    assert job.error_category == "config_error" and "Nope" in job.error


def test_credentials_are_encrypted_and_never_returned(server, mailboxes, make_collection, client):
    make_collection(readable_id="imap-api")
    r = client.post("/source-connections", {
        "short_name": "imap", "readable_collection_id": "imap-api", "config": config(server),
        "authentication": {"credentials": CREDENTIALS}, "sync_immediately": False}, format="json")
    assert r.status_code == 201, r.content
    assert "secret" not in r.content.decode()
    from airweave.collections.models import SourceConnection

    stored = SourceConnection.objects.get(pk=r.json()["id"]).encrypted_credentials
    assert "secret" not in stored and stored


def test_private_servers_are_refused_by_default(settings):
    from connectors.sources.imap import ImapSource

    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(ValueError, match="AIRWEAVE_ALLOW_PRIVATE_HOSTS"):
        ImapSource.validate_config({"host": "127.0.0.1", "mailboxes": ["INBOX"]})
