"""Per-operation fallback chains from defaults.yml, with a circuit breaker per provider.

A chain tries its entries in order: a provider without its key is skipped, a retryable failure
(429, 5xx, timeout) moves to the next entry, a non-retryable one is raised. A provider that
failed `BREAKER_FAILURES` times in a row is left alone for `BREAKER_COOLDOWN_S` seconds.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from airweave.observability.metrics import PROVIDER_FALLBACKS
from airweave.providers.catalog import load_defaults
from airweave.providers.errors import NoProviderAvailable, ProviderError

BREAKER_FAILURES = 3
BREAKER_COOLDOWN_S = 30.0


@dataclass(frozen=True)
class ProviderSpec:
    """One chain entry: provider `name` (e.g. "groq"), its `kind`, `model`, key and base URL."""

    name: str
    kind: str
    model: str
    api_key: str | None
    base_url: str | None
    key_optional: bool = False

    @property
    def label(self) -> str:
        return f"{self.name}/{self.model}"

    def unavailable_reason(self) -> str | None:
        if self.kind == "local":
            if self.model == "cross-encoder":
                from airweave.providers.local_reranker import local_reranker_path

                if local_reranker_path() is None:
                    return "no cross-encoder weights on disk (set AIRWEAVE_LOCAL_RERANKER_PATH)"
            return None
        if not self.api_key and not self.key_optional:
            return f"no API key (set {self.name.upper()}_API_KEY)"
        if not self.base_url:
            return f"no endpoint (set {self.name.upper()}_BASE_URL)"
        return None


class CircuitBreaker:
    """Counts consecutive failures per provider; open (skipped) for a cooldown after too many."""

    def __init__(self):
        self._lock = threading.Lock()
        self._failures: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def is_open(self, name: str) -> bool:
        with self._lock:
            return self._open_until.get(name, 0.0) > time.monotonic()

    def failure(self, name: str) -> None:
        with self._lock:
            self._failures[name] = self._failures.get(name, 0) + 1
            if self._failures[name] >= BREAKER_FAILURES:
                self._open_until[name] = time.monotonic() + BREAKER_COOLDOWN_S
                self._failures[name] = 0

    def success(self, name: str) -> None:
        with self._lock:
            self._failures.pop(name, None)
            self._open_until.pop(name, None)

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._open_until.clear()


BREAKER = CircuitBreaker()


def provider_spec(entry: str, environ=os.environ) -> ProviderSpec:
    """Resolve "provider/model" against defaults.yml and the environment. Raises KeyError for an unknown provider."""
    name, _, model = entry.partition("/")
    config = load_defaults()["providers"][name]
    key_env = config.get("api_key_env")
    return ProviderSpec(
        name=name, kind=config["kind"], model=model,
        api_key=environ.get(key_env) if key_env else None,
        base_url=environ.get(f"{name.upper()}_BASE_URL") or config.get("base_url"),
        key_optional=bool(config.get("key_optional")),
    )


class ProviderChain:
    """The ordered providers of one operation. `call(fn)` returns (result, provider label)."""

    def __init__(self, operation: str, specs: list[ProviderSpec], factory: Callable[[ProviderSpec], Any]):
        self.operation = operation
        self.specs = specs
        self.factory = factory

    @classmethod
    def for_operation(cls, operation: str, factory: Callable[[ProviderSpec], Any], environ=os.environ) -> "ProviderChain":
        entries = load_defaults()["operations"].get(operation, [])
        return cls(operation, [provider_spec(e, environ) for e in entries], factory)

    def available(self) -> list[ProviderSpec]:
        return [s for s in self.specs if s.unavailable_reason() is None]

    def call(self, fn: Callable[[Any, ProviderSpec], Any]):
        """Run `fn(provider, spec)` on the first provider that answers. Raises NoProviderAvailable or ProviderError."""
        reasons: dict[str, str] = {}
        for spec in self.specs:
            why = spec.unavailable_reason()
            if why:
                reasons[spec.label] = why
                continue
            if BREAKER.is_open(spec.name):
                reasons[spec.label] = "circuit open after repeated failures"
                PROVIDER_FALLBACKS.labels(self.operation, spec.label, "circuit_open").inc()
                continue
            try:
                result = fn(self.factory(spec), spec)
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                BREAKER.failure(spec.name)
                reasons[spec.label] = str(exc)
                PROVIDER_FALLBACKS.labels(self.operation, spec.label, "error").inc()
                continue
            BREAKER.success(spec.name)
            return result, spec.label
        raise NoProviderAvailable(self.operation, reasons)
