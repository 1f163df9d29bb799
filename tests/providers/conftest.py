"""Fixtures for provider tests: a local vendor server per test, hermetic provider environment."""
from __future__ import annotations

import pytest

from tests.providers.vendor_server import hermetic_providers, vendor_server  # noqa: F401 (fixtures)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    """Every provider test starts with no keys, short timeouts and a reset circuit breaker."""
    yield
