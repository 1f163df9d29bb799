"""Airweave's published Python SDK (`airweave-sdk`), imported under the name `airweave_sdk`.

The SDK's import package is called `airweave`, the name of this project's own package, which
comes first on the path of every test. Its modules import each other relatively, so the
installed folder loads unchanged under another name.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import time
from pathlib import Path

SDK_VERSION = "0.9.62"
CLI_VERSION = "0.1.15"


def load_sdk():
    """The installed SDK's top-level module (AirweaveSDK, the types, the errors)."""
    if "airweave_sdk" in sys.modules:
        return sys.modules["airweave_sdk"]
    distribution = importlib.metadata.distribution("airweave-sdk")
    assert distribution.version == SDK_VERSION, f"tests are written against airweave-sdk {SDK_VERSION}"
    root = Path(distribution.locate_file("airweave"))
    spec = importlib.util.spec_from_file_location("airweave_sdk", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["airweave_sdk"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["airweave_sdk"]
        raise
    return module


def wait_for_job(client, connection_id: str, done=("completed", "failed", "cancelled"), timeout: float = 180):
    """The newest job of the connection once it reaches one of `done` (polled through the SDK)."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = client.source_connections.get_source_connection_jobs(connection_id)
        if jobs and jobs[0].status in done:
            return jobs[0]
        assert time.monotonic() < deadline, f"job still {jobs[0].status if jobs else 'absent'}"
        time.sleep(0.5)
