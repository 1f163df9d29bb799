"""GET /organizations and GET /users/me: who the caller is, in the shapes of the public Airweave API.

Airweave's CLI (browser login) and its MCP server's HTTP mode ask these. An API key acts for one
organization; /users/me answers the user it acts as: its bound user, else the user who created
it (as in Airweave, where every key belongs to its creator).
"""
from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import OrganizationWithRoleSerializer, UserSerializer, organization_payload, user_payload
from airweave.tenancy import selectors
from airweave.tenancy.context import acting_user


class OrganizationListView(APIView):
    @extend_schema(responses=OrganizationWithRoleSerializer(many=True))
    def get(self, request):
        pairs = selectors.organizations_of_actor(request.user, request.organization)
        return Response(OrganizationWithRoleSerializer(
            [organization_payload(org, role, primary=org.pk == request.organization.pk) for org, role in pairs],
            many=True).data)


class CurrentUserView(APIView):
    @extend_schema(responses={200: UserSerializer, 404: OpenApiResponse(
        description="An organization-wide API key whose creator was removed has no user")})
    def get(self, request):
        user = acting_user(request.user)
        if user is None:
            raise NotFound("User not found: this organization-wide API key has no user (its creator was removed)")
        pairs = selectors.organizations_of_actor(user, request.organization)
        return Response(UserSerializer(user_payload(user, pairs, primary=request.organization)).data)
