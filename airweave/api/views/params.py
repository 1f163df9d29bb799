"""Query-string parsing helpers that answer 422 (located at ["query", name]) on bad input."""
from __future__ import annotations

MAX_OFFSET = 1_000_000_000


class QueryParameterError(ValueError):
    """A bad query-string parameter; `name` is the parameter."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def int_param(request, name: str, default: int, *, minimum: int | None = None, maximum: int = MAX_OFFSET) -> int:
    """Integer query parameter `name`; raises QueryParameterError (→ 422) naming it when invalid."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise QueryParameterError(name, "must be an integer") from None
    if minimum is not None and value < minimum:
        raise QueryParameterError(name, f"must be at least {minimum}")
    if value > maximum:
        raise QueryParameterError(name, f"must be at most {maximum}")
    return value


def str_param(request, name: str, default: str = "") -> str:
    """String query parameter `name`; NUL characters are refused (PostgreSQL text cannot hold them)."""
    value = request.query_params.get(name, default)
    if "\x00" in value:
        raise QueryParameterError(name, "must not contain NUL characters")
    return value


def bool_param(request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise QueryParameterError(name, "must be true or false")
