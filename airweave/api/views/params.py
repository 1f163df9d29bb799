"""Query-string parsing helpers that answer 422 on bad input."""
from __future__ import annotations

from rest_framework.exceptions import ValidationError


def int_param(request, name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Integer query parameter `name`; raises ValidationError (→ 422) naming it when invalid."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: ["must be an integer"]}) from None
    if minimum is not None and value < minimum:
        raise ValidationError({name: [f"must be at least {minimum}"]})
    if maximum is not None and value > maximum:
        raise ValidationError({name: [f"must be at most {maximum}"]})
    return value


def bool_param(request, name: str, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValidationError({name: ["must be true or false"]})
