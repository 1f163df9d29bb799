"""Fixtures of the client-compatibility tests: a live daphne and worker on the test database, an
organization with an API key (committed, so both processes see it), and a folder to sync."""
from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.processes import start_daphne, start_worker

FILES = {
    "hr/leave.md": "---\ntitle: Requesting leave\n---\nTo request annual leave, submit the request in HR Links at "
                   "least two weeks ahead. Your supervisor approves the request in HR Links.",
    "travel.md": "---\ntitle: Travel\n---\nBook travel through the travel agency. Keep every receipt for your voucher.",
    "it/laptops.md": "---\ntitle: Laptops\n---\nIT ships a laptop on your first day. Lost laptops must be reported "
                     "at once to the service desk.",
}


@pytest.fixture(scope="session")
def compat_root(tmp_path_factory) -> Path:
    """The folder the live server may read (AIRWEAVE_LOCAL_ROOTS), with a small handbook in `handbook/`."""
    root = tmp_path_factory.mktemp("compat")
    for rel, text in FILES.items():
        path = root / "handbook" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def live(django_db_setup, django_db_blocker, compat_root):
    """A daphne server and a worker on the test database, and an organization with an API key:
    {url, key, org, root}. Loopback webhook receivers are allowed (the SSRF guard's test setting)."""
    from airweave.tenancy.models import Organization
    from airweave.tenancy.services import api_key_create

    env = {"AIRWEAVE_LOCAL_ROOTS": str(compat_root), "AIRWEAVE_ALLOW_PRIVATE_HOSTS": "1",
           "AIRWEAVE_WEBHOOK_RETRY_SECONDS": "1", "AIRWEAVE_RATE_LIMIT": "", "AIRWEAVE_SEARCH_RATE_LIMIT": ""}
    with django_db_blocker.unblock():
        org = Organization.objects.create(name=f"compat-{uuid.uuid4().hex[:8]}")
        key = api_key_create(organization=org, name="sdk").key
    server, url = start_daphne(AIRWEAVE_WARM_UP="1", **env)
    worker = start_worker(**env)
    yield SimpleNamespace(url=url, key=key, org=org, root=compat_root)
    worker_log, server_log = worker.stop(), server.stop()
    with django_db_blocker.unblock():
        org.delete()
    assert "Traceback" not in server_log, server_log[-3000:]
    assert "Traceback" not in worker_log, worker_log[-3000:]
