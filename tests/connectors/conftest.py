"""Every source test runs with logging at DEBUG and checks that no credential leaks.

The credentials each source is built with (the values of secret-looking keys, 8 characters or
more) must appear neither in any log record of the test, the HTTP libraries' included, nor in
the error text of any sync job it wrote.
"""
from __future__ import annotations

import logging
import re

import pytest

from connectors.base import BaseSource

SECRET_KEY = re.compile(r"(token|secret|password|passwd|api_?key|private_?key|credential|pat)$", re.I)
MIN_SECRET_LENGTH = 8


def _secrets_of(value, into: set[str], key: str = "") -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _secrets_of(v, into, str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            _secrets_of(v, into, key)
    elif isinstance(value, str) and SECRET_KEY.search(key) and len(value) >= MIN_SECRET_LENGTH:
        into.add(value)


def _database_fixture(request) -> str | None:
    """The database fixture the test uses ("db" or "transactional_db"), or None."""
    marker = request.node.get_closest_marker("django_db")
    if "transactional_db" in request.fixturenames or (marker and marker.kwargs.get("transaction")):
        return "transactional_db"
    if "db" in request.fixturenames or marker:
        return "db"
    return None


@pytest.fixture(autouse=True)
def secrets_stay_out_of_logs(request, caplog, monkeypatch):
    database = _database_fixture(request)
    if database:  # set up before this fixture, so the jobs can still be read at its teardown
        request.getfixturevalue(database)
    caplog.set_level(logging.DEBUG)
    secrets: set[str] = set()
    original_init = BaseSource.__init__

    def recording_init(self, config, credentials=None, **kwargs):
        _secrets_of(credentials or {}, secrets)
        original_init(self, config, credentials, **kwargs)

    monkeypatch.setattr(BaseSource, "__init__", recording_init)
    yield
    if not secrets:
        return
    records = caplog.get_records("setup") + caplog.get_records("call")
    logged = "\n".join(record.getMessage() for record in records)
    leaked = sorted(s for s in secrets if s in logged)
    loggers = sorted({r.name for r in records if any(s in r.getMessage() for s in leaked)})
    assert not leaked, f"credentials appear in the logs of {loggers}: {[s[:4] + '…' for s in leaked]}"
    if database:
        from airweave.collections.models import SyncJob

        errors = "\n".join(f"{error} {details}" for error, details in SyncJob.objects.values_list("error", "error_details"))
        leaked = sorted(s for s in secrets if s in errors)
        assert not leaked, f"credentials appear in sync job errors: {[s[:4] + '…' for s in leaked]}"


@pytest.fixture
def vendor():
    """vendor(base_url) -> a tests.connectors.vendor_fake.VendorFake on one `responses` mock; every fake
    is verified at teardown (a request no route documents fails the test). `vendor.rsps` is the mock."""
    import responses

    from tests.connectors.vendor_fake import vendor_fixture

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        make = vendor_fixture(rsps)
        make.rsps = rsps
        yield make
    for fake in make.made:
        fake.verify()
