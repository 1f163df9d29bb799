"""Helpers for tests of SaaS sources: register a source for one test, point OAuth providers at a test YAML."""
from __future__ import annotations

from contextlib import contextmanager

import yaml

from connectors import registry


@contextmanager
def registered(cls, **declaration):
    """Register `cls` with `@source(**declaration)` for the duration of the block, then remove it."""
    registry.source(**declaration)(cls)
    try:
        yield cls
    finally:
        registry._SOURCES.pop(declaration["short_name"], None)


def write_providers(path, providers: dict) -> str:
    """Write an OAuth providers YAML (see connectors/auth/providers.py) to `path`; return its path."""
    path.write_text(yaml.safe_dump(providers))
    return str(path)
