"""/api-keys: create, list, get, revoke and rotate the organization's API keys.

Members see and manage the keys bound to them or created by them; admins and owners (and
organization-wide keys) all keys of the organization. The secret is shown once, in the
answer of creation or rotation.
"""
from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.permissions import HasOrganization, NoAPIKeyChangesByOAuth
from airweave.api.serializers import APIKeyCreateSerializer, APIKeyRotateSerializer, APIKeySerializer, api_key_payload
from airweave.api.views.params import QueryParameterError, int_param, str_param
from airweave.tenancy import policies, selectors, services
from airweave.tenancy.context import acting_user, actor_role, principal_user


def _caller(request):
    """(role, user): the caller's role in the organization and the user it acts as (None: org-wide key)."""
    return actor_role(request.user, request.organization), principal_user(request.user)


def _own_of(request):
    """None when the caller sees every key of the organization, else the user whose keys it sees."""
    role, user = _caller(request)
    return None if policies.can_see_all_api_keys(role) else user


def _visible_key(request, id):
    """The key `id` as the caller may see it; raises APIKey.DoesNotExist (404) otherwise."""
    return selectors.api_key_get(organization=request.organization, id=id, own_of=_own_of(request))


def _revoke(request, id):
    api_key = _visible_key(request, id)
    role, user = _caller(request)
    policies.check_api_key_manage(role, api_key, user)
    services.api_key_revoke(api_key=api_key, by=acting_user(request.user))
    return Response(api_key_payload(api_key))


class APIKeyListView(APIView):
    permission_classes = [HasOrganization, NoAPIKeyChangesByOAuth]

    @extend_schema(parameters=[OpenApiParameter("skip", int), OpenApiParameter("limit", int)],
                   responses=APIKeySerializer(many=True))
    def get(self, request):
        keys = selectors.api_key_list(organization=request.organization, own_of=_own_of(request),
                                      skip=int_param(request, "skip", 0, minimum=0),
                                      limit=int_param(request, "limit", 100, minimum=1, maximum=1000))
        return Response([api_key_payload(k) for k in keys])

    @extend_schema(request=APIKeyCreateSerializer, responses={201: APIKeySerializer})
    def post(self, request):
        data = APIKeyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        role, user = _caller(request)
        policies.check_api_key_create(role, user_bound=v["user_bound"], has_user=user is not None)
        issued = services.api_key_create(organization=request.organization, name=v["name"],
                                         expires_in_days=v["expiration_days"], created_by=acting_user(request.user),
                                         user=user if v["user_bound"] else None)
        return Response(api_key_payload(issued.api_key, issued.key), status=201)

    @extend_schema(operation_id="api_keys_delete_by_query", parameters=[OpenApiParameter("id", str, required=True)],
                   responses={200: APIKeySerializer}, description="The public Airweave API's form: DELETE /api-keys?id=")
    def delete(self, request):
        raw = str_param(request, "id")
        if not raw:
            raise QueryParameterError("id", "the id of the API key to delete is required")
        try:
            key_id = uuid.UUID(raw)
        except ValueError:
            raise QueryParameterError("id", "must be a UUID") from None
        return _revoke(request, key_id)


class APIKeyDetailView(APIView):
    permission_classes = [HasOrganization, NoAPIKeyChangesByOAuth]

    @extend_schema(responses=APIKeySerializer)
    def get(self, request, id):
        return Response(api_key_payload(_visible_key(request, id)))

    @extend_schema(responses={200: APIKeySerializer}, description="Revokes the key: it stops working at once.")
    def delete(self, request, id):
        return _revoke(request, id)


class APIKeyRotateView(APIView):
    permission_classes = [HasOrganization, NoAPIKeyChangesByOAuth]

    @extend_schema(request=APIKeyRotateSerializer, responses=APIKeySerializer,
                   description="Issues a new key with the same name and binding and revokes this one.")
    def post(self, request, id):
        data = APIKeyRotateSerializer(data=request.data if isinstance(request.data, dict) else {})
        data.is_valid(raise_exception=True)
        api_key = _visible_key(request, id)
        role, user = _caller(request)
        policies.check_api_key_manage(role, api_key, user)
        issued = services.api_key_rotate(api_key=api_key, by=acting_user(request.user),
                                         expires_in_days=data.validated_data["expiration_days"])
        return Response(api_key_payload(issued.api_key, issued.key))
