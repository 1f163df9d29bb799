"""Error shapes of docs/api.md: 422 `{"detail": [{loc, msg, type}]}`, 404/409 `{"detail": "..."}`.

Domain exceptions raised by services map to status codes here, so views stay free of try/except.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from airweave.api.compat import database_unavailable_response
from airweave.api.views.params import QueryParameterError
from airweave.availability import database_unavailable
from airweave.collections.services import CollectionConflict, CollectionError
from airweave.providers.embeddings import ProviderUnavailable
from airweave.providers.errors import ProviderError
from airweave.tenancy.policies import NotAllowed
from airweave.tenancy.quotas import QuotaExceeded
from airweave.tenancy.services import TenancyError
from airweave.webhooks.services import WebhookError
from connectors.services import SourceConnectionError
from connectors.sync.jobs import SyncAlreadyRunning
from search.filters import FilterError
from search.instant import SearchRequestError


def _validation_items(detail, loc=("body",)) -> list[dict]:
    items = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            sub = loc if key == "non_field_errors" else (*loc, key)
            items.extend(_validation_items(value, sub))
    elif isinstance(detail, list):
        if all(not isinstance(d, (dict, list)) for d in detail):
            for d in detail:
                items.append({"loc": list(loc), "msg": str(d), "type": getattr(d, "code", "value_error")})
        else:
            for i, d in enumerate(detail):
                items.extend(_validation_items(d, (*loc, i)))
    else:
        items.append({"loc": list(loc), "msg": str(detail), "type": getattr(detail, "code", "value_error")})
    return items


def unprocessable(loc: list, msg: str, type_: str = "value_error") -> Response:
    return Response({"detail": [{"loc": loc, "msg": msg, "type": type_}]}, status=422)


def exception_handler(exc, context):
    """DRF exception handler producing docs/api.md's shapes. Every error answers `application/json`,
    also on a stream endpoint whose client asked for `text/event-stream` (nothing streams yet)."""
    response = _response_for(exc, context)
    if isinstance(response, Response):
        response.content_type = "application/json"
    return response


def _response_for(exc, context):
    if database_unavailable(exc):  # JSON whatever the renderer (an SSE request too), with Retry-After
        return database_unavailable_response(context["request"])
    if isinstance(exc, (FilterError, SearchRequestError)):
        return unprocessable(["body", *exc.loc], str(exc))
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"Request body too large: the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"},
                        status=413)
    if isinstance(exc, (ProviderUnavailable, ProviderError)):
        return Response({"detail": f"A model provider could not answer: {exc}"}, status=503)
    if isinstance(exc, QueryParameterError):
        return unprocessable(["query", exc.name], str(exc))
    if isinstance(exc, QuotaExceeded):
        if exc.retry_after is None:  # a count (connections): waiting will not help
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                        headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, NotAllowed):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, TenancyError):
        return unprocessable(["body", exc.field] if exc.field else ["body"], str(exc))
    if isinstance(exc, (CollectionError, SourceConnectionError, WebhookError)):
        return unprocessable(["body", *exc.field.split(".")] if exc.field else ["body"], str(exc))
    if isinstance(exc, (CollectionConflict, SyncAlreadyRunning)):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, (ObjectDoesNotExist, Http404)):
        name = getattr(getattr(exc, "model", None), "__name__", None) or _model_name(exc)
        return Response({"detail": f"{name} not found"}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, exceptions.ValidationError):
        return Response({"detail": _validation_items(exc.detail)}, status=422)
    if isinstance(exc, exceptions.ParseError):
        return unprocessable(["body"], f"Malformed JSON body: {exc.detail}", "json_invalid")
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.Throttled):
        response["Retry-After"] = str(exc.wait or 1)
    return response


def _model_name(exc) -> str:
    text = type(exc).__qualname__.split(".")[0]
    return text if text not in ("DoesNotExist", "Http404", "ObjectDoesNotExist") else "Resource"
