"""GET /metrics: Prometheus metrics (docs/observability.md).

Off (404) unless AIRWEAVE_METRICS_ENABLED; served only to clients whose address is in
AIRWEAVE_METRICS_ALLOWED_IPS (default loopback), others get 403. No credentials: a scraper sits
next to the server, and the allow-list is what keeps the figures private.
"""
from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from airweave.observability.exposition import CONTENT_TYPE, metrics_client_allowed, metrics_exposition


@require_GET
def metrics_view(request):
    if not settings.AIRWEAVE_METRICS_ENABLED:
        return JsonResponse({"detail": "metrics are disabled (AIRWEAVE_METRICS_ENABLED=false)"}, status=404)
    address = request.META.get("REMOTE_ADDR")
    if not metrics_client_allowed(address):
        return JsonResponse({"detail": f"metrics are not served to {address or 'an unknown address'}: "
                                       "add it to AIRWEAVE_METRICS_ALLOWED_IPS"}, status=403)
    return HttpResponse(metrics_exposition(), content_type=CONTENT_TYPE)
