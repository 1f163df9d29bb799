"""GET /health, /health/live, /health/ready: for load balancers and deployers, without credentials.

`/health` and `/health/live` say the process answers; `/health/ready` also checks the database
(airweave.health.check_database: connection, pgvector, a vector round trip, the HNSW indexes)
and answers 503 naming what is wrong and how to fix it.
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from airweave.api.serializers import HealthSerializer, ReadinessSerializer
from airweave.health import check_database


class _Open(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []


class HealthView(_Open):
    @extend_schema(responses=HealthSerializer, auth=[])
    def get(self, request):
        return Response({"status": "healthy"})


class LivenessView(_Open):
    @extend_schema(responses=HealthSerializer, auth=[])
    def get(self, request):
        return Response({"status": "alive"})


class ReadinessView(_Open):
    @extend_schema(responses={200: ReadinessSerializer, 503: ReadinessSerializer}, auth=[])
    def get(self, request):
        checks = check_database()
        failed = [c for c in checks if not c.ok]
        body = {"status": "not_ready" if failed else "ready",
                "checks": {c.name: {"ok": c.ok, "detail": c.detail, **({"fix": c.fix} if c.fix else {})} for c in checks}}
        if failed:
            body["detail"] = "; ".join(f"{c.name}: {c.detail}" + (f" ({c.fix})" if c.fix else "") for c in failed)
        return Response(ReadinessSerializer(body).data, status=503 if failed else 200)
