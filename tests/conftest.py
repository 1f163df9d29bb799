"""Shared fixtures: two organizations with API keys, API clients, and a helper that syncs a folder."""
from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.test import APIClient

from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

PROJECT_DIR = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_DIR.parent / "shared" / "data"


@pytest.fixture
def org(db):
    return organization_get_or_create(name="Acme")


@pytest.fixture
def other_org(db):
    return organization_get_or_create(name="Globex")


@pytest.fixture
def api_key(org):
    return api_key_create(organization=org, name="test").key


@pytest.fixture
def other_api_key(other_org):
    return api_key_create(organization=other_org, name="test").key


@pytest.fixture
def client(api_key):
    c = APIClient()
    c.credentials(HTTP_X_API_KEY=api_key)
    return c


@pytest.fixture
def other_client(other_api_key):
    c = APIClient()
    c.credentials(HTTP_X_API_KEY=other_api_key)
    return c


@pytest.fixture
def make_collection(org):
    def make(readable_id="docs", name="Test documents", organization=None):
        return collection_create(organization=organization or org, name=name, readable_id=readable_id)

    return make


@pytest.fixture
def sync_folder():
    """sync_folder(collection, path, **config) -> (connection, job): creates a local_files connection and runs one job inline."""

    def run(collection, path, connection=None, force_full_sync=False, **config):
        if connection is None:
            connection = source_connection_create(collection=collection, short_name="local_files",
                                                  config={"path": str(path), **config}, sync_immediately=False,
                                                  for_api=False)
        job = sync_job_start(source_connection=connection, force_full_sync=force_full_sync, enqueue=False)
        job = sync_job_run(job_id=job.id)
        connection.refresh_from_db()
        return connection, job

    return run


@pytest.fixture
def write_files(tmp_path):
    """write_files({"a/b.md": "text", ...}) -> root folder with those files."""

    def write(files: dict[str, str | bytes], root: Path | None = None) -> Path:
        root = root or (tmp_path / "docs")
        for rel, content in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
        root.mkdir(parents=True, exist_ok=True)
        return root

    return write
