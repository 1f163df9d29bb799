"""The mbox and maildir sources and the e-mail converter, on the real mailing-list archives."""
from __future__ import annotations

import mailbox
import shutil
from email.message import EmailMessage
from pathlib import Path

import pytest

from airweave.collections.models import Entity
from connectors.base import Breadcrumb
from connectors.converters import convert_bytes
from connectors.converters.mail import normalize_subject, parse_message
from connectors.sources.mail import MaildirSource, MboxSource
from tests.conftest import SHARED_DATA
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync

MAIL = SHARED_DATA / "mbox_mailing_lists"
APACHE = MAIL / "apache_ponymail"
R_DEVEL = MAIL / "r-package-devel"


def listing(source_cls, **config):
    source = source_cls(source_cls.validate_config(config))
    return list(source.generate_entities({}))


def test_parse_mime_message_with_html_alternative_and_charsets():
    box = mailbox.mbox(APACHE / "users_ponymail_apache_org_2022-01.mbox", create=False)
    first = parse_message(box.get_bytes(box.keys()[0]))
    assert first.subject == "External search form"
    assert first.message_id == "<CAMHy98POmosR8B2YgZfGN-Tok64Zn9roTG98Yu3gRPQ_CT=Mpg@mail.gmail.com>"
    assert "craft a similar form linking to Ponymail" in first.body
    assert "<div" not in first.body  # the text/plain alternative, not the HTML one
    reply = parse_message(box.get_bytes(box.keys()[1]))
    assert reply.thread_root_id == first.message_id

    german = mailbox.mbox(APACHE / "mod-openoffice-users-de-201612-6891.mbox", create=False)
    mail = parse_message(german.get_bytes(german.keys()[0]))
    assert mail.subject == "Re: Bildverankerung, Bildbeschriftung"
    assert "ä" in mail.body or "ü" in mail.body or "ö" in mail.body  # windows-1252 8-bit decoded


def test_pipermail_obfuscated_senders_keep_the_name():
    box = mailbox.mbox(R_DEVEL / "r-package-devel-2025q1.txt", create=False)
    mail = parse_message(box.get_bytes(box.keys()[0]))
    assert mail.sender == "Lunny Oliboni" and mail.sender_address == ""
    assert mail.subject == "[R-pkg-devel] Removing packages files"
    assert normalize_subject("Re: RE: [R-pkg-devel] Removing packages files") == "Removing packages files"


def test_eml_files_convert():
    box = mailbox.mbox(APACHE / "users_ponymail_apache_org_2022-01.mbox", create=False)
    doc = convert_bytes(box.get_bytes(box.keys()[0]), "message.eml", max_bytes=1 << 20)
    assert doc.title == "External search form"
    assert doc.text.startswith("Subject: External search form\nFrom: ")
    assert doc.fields["message_id"].startswith("<CAMHy98POmos")


def test_mbox_entities_of_the_real_archives():
    entities = listing(MboxSource, path=str(APACHE))
    messages = [e for e in entities if e.entity_type() == "EmailEntity"]
    attachments = [e for e in entities if e.entity_type() == "EmailAttachmentEntity"]
    assert len(messages) == 119
    assert {a.name for a in attachments} == {"testtext.txt", "testutf8body.txt", "empty.txt"}
    plain = next(a for a in attachments if a.name == "testtext.txt")
    assert plain.read_bytes() == b"Plain text\n"
    assert plain.breadcrumbs[-1].entity_type == "EmailEntity"
    assert convert_bytes(plain.read_bytes(), plain.file_name, max_bytes=100).text == "Plain text"

    reply = next(e for e in messages if e.entity_id == "CAOqetn9H_th-AuTrLQ9R=NS5MxbiCchSiMon2RFMCHqW9qYTHQ@mail.gmail.com")
    assert reply.breadcrumbs == [
        Breadcrumb("mailbox:users_ponymail_apache_org_2022-01", "users_ponymail_apache_org_2022-01", "EmailMailbox"),
        Breadcrumb("CAMHy98POmosR8B2YgZfGN-Tok64Zn9roTG98Yu3gRPQ_CT=Mpg@mail.gmail.com", "External search form",
                   "EmailEntity"),
    ]
    fields = reply.raw_source_fields
    assert fields["subject"] == "Re: External search form"
    assert fields["thread_id"] == "CAMHy98POmosR8B2YgZfGN-Tok64Zn9roTG98Yu3gRPQ_CT=Mpg@mail.gmail.com"
    assert fields["from_address"].endswith("@example.com")
    assert reply.created_at.tzinfo is not None and reply.updated_at == reply.created_at
    assert reply.textual_representation().startswith("Subject: Re: External search form\nFrom: ")


def test_mbox_config_is_checked(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="not an mbox"):
        MboxSource.validate_config({"path": str(tmp_path / "notes.txt")})
    with pytest.raises(ValueError, match="does not exist"):
        MboxSource.validate_config({"path": str(tmp_path / "none.mbox")})
    with pytest.raises(ValueError, match="not a Maildir"):
        MaildirSource.validate_config({"path": str(tmp_path)})


def _message(message_id: str, subject: str, body: str, reply_to: str | None = None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "Ana Lima <ana@example.org>"
    msg["To"] = "team@example.org"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 03 Mar 2026 10:00:00 +0000"
    msg["Message-ID"] = f"<{message_id}>"
    if reply_to:
        msg["In-Reply-To"] = msg["References"] = f"<{reply_to}>"
    msg.set_content(body)
    return msg


def _rewrite_mbox(path: Path, keep, replace: dict | None = None) -> None:
    """Rewrite the mbox keeping messages whose Message-ID `keep(id)` accepts, replacing some."""
    box = mailbox.mbox(path, create=False)
    box.lock()
    try:
        for key in list(box.keys()):
            msg = box[key]
            mid = (msg["Message-ID"] or "").strip().strip("<>")
            if not keep(mid):
                box.remove(key)
            elif replace and mid in replace:
                box[key] = replace[mid]
        box.flush()
    finally:
        box.unlock()
        box.close()


def test_mbox_lifecycle(tmp_path, make_collection, client):
    folder = tmp_path / "mail"
    folder.mkdir()
    shutil.copy(APACHE / "users_ponymail_apache_org_2022-01.mbox", folder / "users.mbox")
    shutil.copy(APACHE / "attachments.mbox", folder / "attachments.mbox")
    collection = make_collection(readable_id="mbox")
    connection = connect(collection, "mbox", {"path": str(folder)})
    first = sync(connection)
    assert first.entities_inserted == 6 + 5 + 2  # messages + the readable non-empty attachments
    assert first.entities_skipped == 1  # empty.txt
    root = "CAMHy98POmosR8B2YgZfGN-Tok64Zn9roTG98Yu3gRPQ_CT=Mpg@mail.gmail.com"
    assert root in search_ids(client, collection, "search form linking to Ponymail without Javascript")

    edited = _message(root, "External search form", "Could the archive offer a search widget for lighthouse keepers?")
    with_attachment = "20161121171202.GA25827@minotaur.apache.org"
    assert f"{with_attachment}#attachment-1" in entity_ids(connection)
    _rewrite_mbox(folder / "users.mbox", keep=lambda mid: True, replace={root: edited})
    _rewrite_mbox(folder / "attachments.mbox", keep=lambda mid: mid != with_attachment)
    second = sync(connection)
    assert (second.entities_inserted, second.entities_updated, second.entities_deleted) == (0, 1, 2)
    assert "lighthouse keepers" in entity_text(connection, root)
    assert search_ids(client, collection, "search widget for lighthouse keepers")[0] == root
    assert not {with_attachment, f"{with_attachment}#attachment-1"} & entity_ids(connection)

    _rewrite_mbox(folder / "users.mbox", keep=lambda mid: mid != root)
    third = sync(connection)
    assert third.entities_deleted == 1
    assert root not in entity_ids(connection)
    assert root not in search_ids(client, collection, "search widget for lighthouse keepers")
    assert counts(sync(connection)) == (0, 0, 10, 0)


def test_maildir_lifecycle(tmp_path, make_collection, client):
    md = mailbox.Maildir(tmp_path / "Maildir", create=True)
    keys = {
        "q1@example.org": md.add(_message("q1@example.org", "Boiler pressure",
                                          "The boiler pressure gauge reads 0.5 bar after the holidays.")),
        "a1@example.org": md.add(_message("a1@example.org", "Re: Boiler pressure",
                                          "Top it up to 1.5 bar with the filling loop.", reply_to="q1@example.org")),
    }
    sent = md.add_folder("Sent")
    keys["s1@example.org"] = sent.add(_message("s1@example.org", "Invoice 42", "Please find the invoice for March."))
    collection = make_collection(readable_id="maildir")
    connection = connect(collection, "maildir", {"path": str(tmp_path / "Maildir")})
    first = sync(connection)
    assert first.entities_inserted == 3
    answer = Entity.objects.get(source_connection=connection, entity_id="a1@example.org")
    assert [b["entity_id"] for b in answer.breadcrumbs] == ["mailbox:INBOX", "q1@example.org"]
    assert Entity.objects.get(source_connection=connection, entity_id="s1@example.org").breadcrumbs[0]["name"] == "Sent"
    assert "a1@example.org" in search_ids(client, collection, "filling loop boiler")

    md.remove(keys["a1@example.org"])  # a mail client's edit of a draft: a new file, same Message-ID
    md.add(_message("a1@example.org", "Re: Boiler pressure", "Call the plumber, the expansion vessel leaks.",
                    reply_to="q1@example.org"))
    second = sync(connection)
    assert counts(second) == (0, 1, 2, 0)
    assert "expansion vessel" in entity_text(connection, "a1@example.org")

    sent.remove(keys["s1@example.org"])
    third = sync(connection)
    assert third.entities_deleted == 1 and "s1@example.org" not in entity_ids(connection)
    assert "s1@example.org" not in search_ids(client, collection, "invoice for March")


def test_mbox_subset_answers_a_question(tmp_path, make_collection, client):
    """30 messages of the R-package-devel archive: a question finds its thread."""
    src = mailbox.mbox(R_DEVEL / "r-package-devel-2025q1.txt", create=False)
    subset = mailbox.mbox(tmp_path / "r-devel.mbox", create=True)
    for key in src.keys()[:30]:
        subset.add(src.get_message(key))
    subset.flush()
    collection = make_collection(readable_id="r-devel")
    connection = connect(collection, "mbox", {"path": str(tmp_path / "r-devel.mbox")})
    sync(connection)
    top = search_ids(client, collection, "How do I remove package files when a package is uninstalled?", limit=5)
    thread = "CAN+W6_sjx59W6hGGMyj565smnazws=uasSWbwEHEe7kXT+YLAQ@mail.gmail.com"
    subjects = [Entity.objects.get(source_connection=connection, entity_id=e).raw_source_fields["thread_id"]
                for e in top[:3]]
    assert thread in subjects


@pytest.mark.slow
def test_full_mailing_list_archives_sync_and_answer(make_collection, client):
    collection = make_collection(readable_id="lists")
    connection = connect(collection, "mbox", {"path": str(MAIL)})
    job = sync(connection)
    assert job.entities_inserted >= 860
    top = search_ids(client, collection, "How do I remove package files when a package is uninstalled?", limit=10)
    threads = [Entity.objects.get(source_connection=connection, entity_id=e).raw_source_fields.get("thread_id")
               for e in top]
    assert "CAN+W6_sjx59W6hGGMyj565smnazws=uasSWbwEHEe7kXT+YLAQ@mail.gmail.com" in threads
