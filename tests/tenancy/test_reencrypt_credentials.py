"""Credentials at rest: Fernet under rotating keys; `reencrypt_credentials` moves every one to the newest
key and leaves connections working; secrets never reach logs, answers or admin pages."""
from __future__ import annotations

import logging
from io import StringIO

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.management import CommandError, call_command

from airweave.collections.models import SourceConnection
from airweave.crypto import decrypt_json, encrypt_json, generate_key
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

SECRET = {"token": "s3cret-token-value", "password": "hunter2-value"}


@pytest.fixture
def connection(make_collection, write_files):
    return source_connection_create(collection=make_collection(), short_name="local_files",
                                    config={"path": str(write_files({"a.md": "# A\nAlpha."}))}, credentials=SECRET,
                                    sync_immediately=False, for_api=False)


def _token(connection) -> str:
    return SourceConnection.objects.get(pk=connection.pk).encrypted_credentials


def _reencrypt(*args) -> str:
    out = StringIO()
    call_command("reencrypt_credentials", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_rotation_moves_every_credential_to_the_new_key(settings, connection, make_collection, write_files):
    old, new = generate_key(), generate_key()
    settings.AIRWEAVE_FERNET_KEYS = [old]
    second = source_connection_create(collection=make_collection(readable_id="second"), short_name="local_files",
                                      config={"path": str(write_files({"b.md": "B"}))}, credentials={"k": "v"},
                                      sync_immediately=False, for_api=False)
    SourceConnection.objects.filter(pk=connection.pk).update(encrypted_credentials=encrypt_json(SECRET))
    before = _token(connection)
    Fernet(old).decrypt(before.encode())

    settings.AIRWEAVE_FERNET_KEYS = [new, old]
    output = _reencrypt()
    assert "2 credentials checked, 2 re-encrypted" in output and "0 unreadable" in output
    assert "s3cret" not in output and "hunter2" not in output

    settings.AIRWEAVE_FERNET_KEYS = [new]  # the old key is gone: everything still decrypts
    with pytest.raises(InvalidToken):
        Fernet(old).decrypt(_token(connection).encode())
    assert decrypt_json(_token(connection)) == SECRET
    assert decrypt_json(_token(second)) == {"k": "v"}
    # ... and the connection still syncs with its credentials.
    connection.refresh_from_db()
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert job.status == "completed", job.error


def test_credentials_written_before_any_key_was_set_move_to_the_first_key(settings, connection):
    """Without AIRWEAVE_FERNET_KEYS a key derived from SECRET_KEY encrypts; it still decrypts once keys are set."""
    settings.AIRWEAVE_FERNET_KEYS = []
    legacy = encrypt_json(SECRET)
    SourceConnection.objects.filter(pk=connection.pk).update(encrypted_credentials=legacy)
    first = generate_key()
    settings.AIRWEAVE_FERNET_KEYS = [first]
    assert decrypt_json(legacy) == SECRET
    _reencrypt()
    assert Fernet(first).decrypt(_token(connection).encode())


def test_running_twice_is_harmless(settings, connection):
    settings.AIRWEAVE_FERNET_KEYS = [generate_key()]
    _reencrypt()
    _reencrypt()
    assert decrypt_json(_token(connection)) == SECRET


def test_check_only_reads(settings, connection):
    before = _token(connection)
    assert "1 credentials checked, 0 unreadable" in _reencrypt("--check")
    assert _token(connection) == before


def test_unreadable_credentials_are_reported_by_row_not_content(settings, connection):
    SourceConnection.objects.filter(pk=connection.pk).update(
        encrypted_credentials=Fernet(generate_key()).encrypt(b'{"token": "lost-secret"}').decode())
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("reencrypt_credentials", stdout=StringIO(), stderr=err)
    assert f"SourceConnection {connection.pk}" in err.getvalue()
    assert "lost-secret" not in err.getvalue()


def test_generate_key_prints_a_fernet_key():
    key = _reencrypt("--generate-key").strip()
    Fernet(key)


def test_a_bad_configured_key_is_a_clear_configuration_error(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.AIRWEAVE_FERNET_KEYS = ["not-a-key"]
    with pytest.raises(ImproperlyConfigured, match="key 1 is not a Fernet key"):
        encrypt_json({"a": 1})


def test_secrets_never_reach_answers_admin_pages_or_logs(client, connection, caplog, settings, tmp_path):
    from django.test import Client

    from airweave.tenancy.models import User

    caplog.set_level(logging.DEBUG)
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    created = client.post("/source-connections", {
        "short_name": "local_files", "readable_collection_id": "docs", "config": {"path": str(tmp_path)},
        "authentication": {"credentials": SECRET}, "sync_immediately": True}, format="json")
    assert created.status_code == 201, created.content
    new_id = created.json()["id"]
    pages = [created.content, client.get(f"/source-connections/{new_id}").content, client.get("/source-connections").content,
             client.get(f"/source-connections/{connection.id}").content,
             client.get(f"/source-connections/{new_id}/jobs").content]
    User.objects.create_superuser("ops@example.com", "pw-123456")
    admin = Client()
    admin.login(email="ops@example.com", password="pw-123456")
    for model in ("sourceconnection",):
        pages.append(admin.get(f"/admin/collections/{model}/").content)
        pages.append(admin.get(f"/admin/collections/{model}/{connection.id}/change/").content)
    for body in pages:
        text = body.decode()
        for value in SECRET.values():
            assert value not in text
        assert _token(connection) not in text
    logged = caplog.text + "".join(str(r.args) for r in caplog.records)
    for value in SECRET.values():
        assert value not in logged


def test_a_process_without_the_key_fails_the_sync_with_a_clear_error(settings, connection):
    """A web server or worker not restarted with the new key cannot read re-encrypted credentials:
    the job fails saying so (a configuration error), never with a bare InvalidToken."""
    old, new = generate_key(), generate_key()
    settings.AIRWEAVE_FERNET_KEYS = [new, old]
    _reencrypt()
    settings.AIRWEAVE_FERNET_KEYS = [old]  # a worker still on the old key
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert job.status == "failed" and job.error_category == "config_error"
    assert "AIRWEAVE_FERNET_KEYS" in job.error and "s3cret" not in job.error
    settings.AIRWEAVE_FERNET_KEYS = [new]
    assert sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id).status == "completed"
