"""The search playground `/ui/collections/<readable_id>/search`.

The page (GET, works without JavaScript: the form runs the search and renders results) and its
stream (POST JSON → Server-Sent Events of docs/api.md: the operations timeline, the answer token by
token, the results), both through the search services the REST API calls. An admin may search as
a member of the organization, with that member's access principals.
"""
from __future__ import annotations

import json

from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET, require_POST

from airweave.collections import selectors
from airweave.collections.access import principals_for
from airweave.tenancy import policies
from airweave.tenancy import selectors as tenancy_selectors
from airweave.tenancy.models import Membership
from airweave.tenancy.quotas import QuotaExceeded
from airweave.web.ui.access import collection_or_404, render_page, ui_view
from airweave.web.ui.playground import (
    FLAGS, STRATEGIES, TIERS, cite_links, parse_playground, render_result, result_rows,
)
from airweave.web.ui.snippets import search_snippets
from search.agentic import search_agentic
from search.filters import FIELDS, V2_OPERATORS, FilterError, parse_filter_groups
from search.instant import SearchRequestError
from search.pipeline import PipelineRequest, search_prepare, search_run
from search.streams import sse, stream_from_thread


def _principals(caller, as_member: str | None):
    """The caller's principals, or (admins only) those of the member `as_member` (a membership id)."""
    if not as_member:
        return caller.principals, None
    policies.require_role(caller.role, Membership.Role.ADMIN, "searching as another member")
    try:
        membership = tenancy_selectors.membership_get(organization=caller.organization, id=as_member)
    except Membership.DoesNotExist:
        raise SearchRequestError("no such member in this organization", ["as_member"]) from None
    return principals_for(actor=membership.user, organization=caller.organization), membership


def _run(collection, request, principals, stream=None):
    """Run a playground request through the search services; returns (results, completion)."""
    if request.tier == "agentic":
        response = search_agentic(collection=collection, query=request.query, principals=principals,
                                  filter_groups=request.filter if isinstance(request.filter, list) else None,
                                  limit=request.limit, stream=stream)
        return response.results, None
    prepared = search_prepare(collection=collection, request=PipelineRequest(**request.pipeline_kwargs()),
                              principals=principals, tier="ui")
    result = search_run(prepared, stream, render=render_result)
    return result.results, result.completion


def _error(exc) -> dict:
    """docs/api.md's 422 body for a bad playground request."""
    return {"detail": [{"loc": ["body", *getattr(exc, "loc", [])], "msg": str(exc), "type": "value_error"}]}


@ui_view
@require_GET
def playground(request, caller, readable_id):
    """The playground page; with `query` in the URL it also runs the search (no JavaScript needed)."""
    collection = collection_or_404(caller, readable_id)
    members = tenancy_selectors.membership_list(organization=caller.organization) if caller.is_admin else []
    context = {"collection": collection, "tiers": TIERS, "strategies": STRATEGIES, "flags": FLAGS, "members": members,
               "filter_fields": FIELDS, "filter_operators": V2_OPERATORS, "values": request.GET,
               "connections": selectors.source_connection_list(organization=caller.organization,
                                                               collection_readable_id=collection.readable_id,
                                                               principals=caller.principals)}
    if request.GET.get("query"):
        try:
            parsed = parse_playground(request.GET)
            principals, as_membership = _principals(caller, parsed.as_member)
            results, completion = _run(collection, parsed, principals)
        except (SearchRequestError, FilterError) as exc:
            context["error"] = _error(exc)["detail"][0]
            return render_page(request, caller, "ui/search.html", status=422, **context)
        except QuotaExceeded as exc:
            context["error"] = {"loc": [], "msg": str(exc)}
            return render_page(request, caller, "ui/search.html", status=429, **context)
        path, body = parsed.rest_request()
        context.update(results=result_rows(results, parsed.query), completion=cite_links(completion),
                       searched=parsed, as_membership=as_membership,
                       snippets=search_snippets(base_url=request.build_absolute_uri("/").rstrip("/"),
                                                readable_id=collection.readable_id, body=body, path=path))
    return render_page(request, caller, "ui/search.html", **context)


@ui_view
@require_POST
def playground_stream(request, caller, readable_id):
    """POST a playground request as JSON; answers 422 at the bad field, else Server-Sent Events."""
    collection = collection_or_404(caller, readable_id)
    try:
        data = json.loads(request.body or b"{}")
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        return JsonResponse({"detail": [{"loc": ["body"], "msg": "send one JSON object", "type": "json_invalid"}]},
                            status=422)
    try:
        parsed = parse_playground(data)
        principals, _ = _principals(caller, parsed.as_member)
        if parsed.tier == "agentic":
            parse_filter_groups(parsed.filter if isinstance(parsed.filter, list) else None)
            run = (lambda stream: _run(collection, parsed, principals, stream))
        else:
            prepared = search_prepare(collection=collection, request=PipelineRequest(**parsed.pipeline_kwargs()),
                                      principals=principals, tier="ui")
            run = (lambda stream: search_run(prepared, stream, render=render_result))
    except (SearchRequestError, FilterError) as exc:
        return JsonResponse(_error(exc), status=422)
    except QuotaExceeded as exc:
        return JsonResponse({"detail": str(exc)}, status=429)
    path, body = parsed.rest_request()
    snippets = search_snippets(base_url=request.build_absolute_uri("/").rstrip("/"),
                               readable_id=collection.readable_id, body=body, path=path)
    events = stream_from_thread(run, first={"type": "connected", "snippets": snippets})
    response = StreamingHttpResponse(sse(events), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
