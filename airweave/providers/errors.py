"""Provider failures, split by what the fallback chain should do with them."""


class ProviderError(Exception):
    """A provider call failed. `retryable` (429, 5xx, timeout, connection) moves the chain on."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class NoProviderAvailable(Exception):
    """No provider of a chain could answer; `reasons` maps each provider to why."""

    def __init__(self, operation: str, reasons: dict[str, str]):
        detail = "; ".join(f"{name}: {why}" for name, why in reasons.items()) or "no provider configured"
        super().__init__(f"no provider for {operation} ({detail})")
        self.operation = operation
        self.reasons = reasons
