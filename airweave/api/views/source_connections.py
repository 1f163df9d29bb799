"""/source-connections: create, list, get, update, delete, run, jobs, cancel."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.http import HttpResponseRedirect
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework.exceptions import APIException
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import (
    SourceConnectionCreateSerializer, SourceConnectionJobSerializer, SourceConnectionListItemSerializer,
    SourceConnectionSerializer,
    SourceConnectionUpdateSerializer,
)
from airweave.api.views.collections import _user
from airweave.api.views.params import bool_param, int_param, str_param
from airweave.api.permissions import request_principals
from airweave.collections import selectors
from connectors import authorization, services
from connectors import selectors as connection_selectors
from connectors.sync.services import sync_job_cancel, sync_job_start



class Conflict(APIException):
    status_code = 409
    default_code = "conflict"


def _detail(connection, request):
    return SourceConnectionSerializer(connection_selectors.source_connection_detail(
        connection=connection, principals=request_principals(request))).data


class SourceConnectionListView(APIView):
    @extend_schema(operation_id="source_connections_list",
                   parameters=[OpenApiParameter("collection", str), OpenApiParameter("skip", int),
                               OpenApiParameter("limit", int)], responses=SourceConnectionListItemSerializer(many=True))
    def get(self, request):
        items = connection_selectors.source_connection_list_items(
            organization=request.organization, collection_readable_id=str_param(request, "collection") or None,
            skip=int_param(request, "skip", 0, minimum=0), limit=int_param(request, "limit", 100, minimum=1, maximum=1000),
            principals=request_principals(request),
        )
        return Response(SourceConnectionListItemSerializer(items, many=True).data)

    @extend_schema(request=SourceConnectionCreateSerializer, responses={201: SourceConnectionSerializer})
    def post(self, request):
        data = SourceConnectionCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = selectors.collection_get(organization=request.organization, readable_id=v["readable_collection_id"])
        schedule = v.get("schedule") or {}
        authentication = {k: val for k, val in (v.get("authentication") or {}).items()
                          if val is not None and k != "type"}  # the fields tell the shapes apart
        connection = services.source_connection_create(
            collection=collection, short_name=v["short_name"], name=v.get("name"), description=v.get("description") or "",
            config=v.get("config") or {}, authentication=authentication,
            cron_schedule=schedule.get("cron") or "", sync_immediately=v["sync_immediately"], created_by=_user(request),
            redirect_url=v.get("redirect_url"),
        )
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=connection.id), request),
                        status=201)


class CollectionSourceConnectionListView(APIView):
    """GET /collections/{readable_id}/source-connections: the list of one collection (Airweave's CLI asks it)."""

    @extend_schema(operation_id="collection_source_connections_list",
                   parameters=[OpenApiParameter("skip", int), OpenApiParameter("limit", int)],
                   responses=SourceConnectionListItemSerializer(many=True))
    def get(self, request, readable_id):
        collection = selectors.collection_get(organization=request.organization, readable_id=readable_id)
        items = connection_selectors.source_connection_list_items(
            organization=request.organization, collection_readable_id=collection.readable_id,
            skip=int_param(request, "skip", 0, minimum=0), limit=int_param(request, "limit", 100, minimum=1, maximum=1000),
            principals=request_principals(request),
        )
        return Response(SourceConnectionListItemSerializer(items, many=True).data)


class SourceConnectionDetailView(APIView):
    @extend_schema(responses=SourceConnectionSerializer)
    def get(self, request, id):
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=id), request))

    @extend_schema(request=SourceConnectionUpdateSerializer, responses=SourceConnectionSerializer)
    def patch(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        data = SourceConnectionUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        authentication = {k: val for k, val in (fields.pop("authentication", None) or {}).items()
                          if val is not None and k != "type"}
        services.source_connection_update(source_connection=connection, modified_by=_user(request),
                                          authentication=authentication or None, **fields)
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=id), request))

    @extend_schema(responses={200: SourceConnectionSerializer})
    def delete(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        payload = _detail(connection, request)
        services.source_connection_delete(source_connection=connection)
        return Response(payload)


class SourceConnectionVerifyOAuthView(APIView):
    @extend_schema(request=None, responses={200: SourceConnectionSerializer, 409: None},
                   description="The connection once its OAuth flow has completed; 409 while it still waits.")
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        if not connection.is_authenticated:
            raise Conflict("The OAuth flow of this connection has not completed: open auth.auth_url (or POST "
                           f"/source-connections/{connection.id}/reinitiate-oauth for a new link)")
        return Response(_detail(connection, request))


class SourceConnectionReinitiateOAuthView(APIView):
    @extend_schema(request=None, responses=SourceConnectionSerializer,
                   description="A new OAuth authorization link (auth.auth_url) for a browser-flow connection.")
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        body = request.data if isinstance(request.data, dict) else {}
        services.source_connection_reinitiate_oauth(source_connection=connection,
                                                    redirect_url=body.get("redirect_url") or None)
        return Response(_detail(selectors.source_connection_get(organization=request.organization, id=id), request))


class SourceConnectionRunView(APIView):
    @extend_schema(parameters=[OpenApiParameter("force_full_sync", bool)], request=None,
                   responses=SourceConnectionJobSerializer)
    def post(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        body = request.data if isinstance(request.data, dict) else {}  # the CLI sends {"force_full_sync": true}
        force = bool_param(request, "force_full_sync") or body.get("force_full_sync") is True
        job = sync_job_start(source_connection=connection, force_full_sync=force)
        return Response(SourceConnectionJobSerializer(connection_selectors.sync_job_detail(job)).data)


class SourceConnectionJobsView(APIView):
    @extend_schema(parameters=[OpenApiParameter("limit", int)], responses=SourceConnectionJobSerializer(many=True))
    def get(self, request, id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        jobs = selectors.sync_job_list(source_connection=connection, limit=int_param(request, "limit", 100, minimum=1, maximum=1000))
        return Response(SourceConnectionJobSerializer([connection_selectors.sync_job_detail(j) for j in jobs], many=True).data)


class SourceConnectionJobCancelView(APIView):
    @extend_schema(request=None, responses=SourceConnectionJobSerializer)
    def post(self, request, id, job_id):
        connection = selectors.source_connection_get(organization=request.organization, id=id)
        job = selectors.sync_job_get(organization=request.organization, id=job_id, source_connection=connection)
        return Response(SourceConnectionJobSerializer(connection_selectors.sync_job_detail(sync_job_cancel(job=job))).data)


class SourceConnectionAuthorizeView(APIView):
    """GET /source-connections/authorize/{claim}: the one-time link of `auth.auth_url`.

    Binds the flow to this browser (an HttpOnly cookie) and redirects to the provider.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(exclude=True)
    def get(self, request, claim):
        try:
            provider_url, nonce = authorization.claim_authorization(claim)
        except authorization.AuthorizationError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        response = HttpResponseRedirect(provider_url)
        response.set_cookie(authorization.BROWSER_COOKIE, nonce, max_age=authorization.flow_seconds(), httponly=True,
                            samesite="Lax", secure=request.is_secure(), path="/source-connections/callback")
        return response


class SourceConnectionCallbackView(APIView):
    """GET /source-connections/callback?state=&code=: the OAuth redirect target (OAuth 1: oauth_token, oauth_verifier).

    Redirects to the flow's redirect URL with `status=success&source_connection_id=` (or
    `status=error&error=oauth_error&message=`); without one, answers JSON.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(parameters=[OpenApiParameter("state", str), OpenApiParameter("code", str)], responses={
        200: inline_serializer("OAuthCallbackSuccess", {"status": drf_serializers.CharField(),
                                                        "source_connection_id": drf_serializers.UUIDField()}),
        302: OpenApiResponse(description="To the flow's redirect URL, with status=success or status=error"),
        400: OpenApiResponse(description="An unknown or used state, a callback without code, a refusal"),
        410: OpenApiResponse(description="The authorization expired or its link was already opened"),
        502: OpenApiResponse(description="The provider's token endpoint failed"),
    })
    def get(self, request):
        q = request.query_params
        try:
            done = authorization.complete_authorization(
                state=q.get("state", ""), code=q.get("code"), error=q.get("error"),
                error_description=q.get("error_description"), oauth_token=q.get("oauth_token"),
                oauth_verifier=q.get("oauth_verifier"), browser_nonce=request.COOKIES.get(authorization.BROWSER_COOKIE))
        except authorization.AuthorizationError as exc:
            if exc.redirect_url:
                return _redirect_with(exc.redirect_url, status="error", error="oauth_error", message=str(exc)[:300],
                                      source_connection_id=str(exc.connection.id))
            return Response({"detail": str(exc)}, status=exc.status)
        if done.redirect_url:
            response = _redirect_with(done.redirect_url, status="success", source_connection_id=str(done.connection.id))
        else:
            response = Response({"status": "success", "source_connection_id": str(done.connection.id)})
        response.delete_cookie(authorization.BROWSER_COOKIE, path="/source-connections/callback")
        return response


def _redirect_with(url: str, **params) -> HttpResponseRedirect:
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query), *params.items()])
    return HttpResponseRedirect(urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)))
