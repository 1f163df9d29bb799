"""Fixtures of the MCP and OAuth tests: a synced collection, and a real daphne server on a free port."""
from __future__ import annotations

import anyio
import pytest
from django.conf import settings

from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.processes import start_daphne
from tests.providers.vendor_server import hermetic_providers  # noqa: F401 (fixture)

FILES = {
    "hr/leave.md": "---\ntitle: Requesting leave\n---\nTo request annual leave, submit the request in HR Links at "
                   "least two weeks ahead. Your supervisor approves the request in HR Links.",
    "travel.md": "---\ntitle: Travel\n---\nBook travel through the travel agency. Keep every receipt for your voucher.",
    "it/laptops.md": "---\ntitle: Laptops\n---\nIT ships a laptop on your first day. Lost laptops must be reported "
                     "at once to the service desk.",
}


@pytest.fixture
def handbook(transactional_db, write_files, hermetic_providers):
    """An organization with a synced collection `handbook` and an API key: {org, collection, key}."""
    org = organization_get_or_create(name="Handbook org")
    collection = collection_create(organization=org, name="Staff handbook", readable_id="handbook")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(write_files(FILES))}, sync_immediately=False,
                                          for_api=False)
    sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    return {"org": org, "collection": collection, "key": api_key_create(organization=org, name="mcp").key}


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker):
    """A daphne server of the whole ASGI application on the test database (one for the session): its base URL."""
    # AIRWEAVE_WARM_UP: the server loads the embedding model while the first test syncs its collection.
    server, url = start_daphne(AIRWEAVE_WARM_UP="1")
    yield url
    errors = server.stop()
    assert "Traceback" not in errors, errors[-3000:]


def run_async(calls):
    """Run the coroutine function `calls()` to completion from a synchronous test; its result."""
    return anyio.run(calls)


@pytest.fixture
def counting_cache(settings):
    """A cache that keeps rate-limit counts (the test settings' DummyCache keeps nothing)."""
    from django.core.cache import caches

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "LOCATION": "mcp-rate-limit-tests"}}
    caches["default"].clear()
    yield
    caches["default"].clear()
