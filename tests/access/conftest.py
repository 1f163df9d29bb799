"""Fixtures of the access-control tests: JSON exports for the test-only sources and their syncs."""
from __future__ import annotations

import json

import pytest

import tests.access.sources  # noqa: F401  (registers acl_wiki, acl_directory, test_tracker)
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start


@pytest.fixture
def write_json(tmp_path):
    """write_json(name, data) -> path of a JSON file under the test's folder (overwritten when it exists)."""

    def write(name: str, data: dict):
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    return write


@pytest.fixture
def sync_wiki(write_json):
    """sync_wiki(collection, export, connection=None, name="wiki") -> (connection, job): syncs an acl_wiki export."""

    def run(collection, export: dict, connection=None, name: str = "wiki"):
        path = write_json(f"{name}.json", export)
        if connection is None:
            connection = source_connection_create(collection=collection, short_name="acl_wiki", name=name,
                                                  config={"export_path": str(path)},
                                                  credentials={"api_token": "t0ken"}, sync_immediately=False,
                                                  for_api=False)
        job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
        connection.refresh_from_db()
        return connection, job

    return run
