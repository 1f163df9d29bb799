"""JSON parsing that refuses NUL characters, which PostgreSQL text and jsonb cannot store."""
from __future__ import annotations

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser


def _nul_path(value, path=()):
    """The path (tuple) of the first string (or key) holding a NUL character, or None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                return (*path, key)
            found = _nul_path(item, (*path, key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_path(item, (*path, index))
            if found is not None:
                return found
    return None


class StrictJSONParser(JSONParser):
    """DRF's JSON parser, plus a 422 naming the field when a string holds a NUL character."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON nested too deeply") from None
        try:
            path = _nul_path(data)
        except RecursionError:
            raise ParseError("JSON nested too deeply") from None
        if path is not None:
            error: object = ["must not contain NUL (\\u0000) characters"]
            for key in reversed(path):
                error = {key: error} if isinstance(key, str) else [*([{}] * key), error]
            raise ValidationError(error if isinstance(error, dict) else {"non_field_errors": error})
        return data
