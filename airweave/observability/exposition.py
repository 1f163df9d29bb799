"""The text that `/metrics` answers, and who may read it."""
from __future__ import annotations

import ipaddress
import os

from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest

CONTENT_TYPE = CONTENT_TYPE_LATEST


def metrics_client_allowed(address: str | None) -> bool:
    """Whether the client at `address` (an IPv4 or IPv6 address, e.g. REMOTE_ADDR) may read the
    metrics: it must fall in one of AIRWEAVE_METRICS_ALLOWED_IPS (addresses or CIDR networks).
    A missing or malformed address is refused. Raises ValueError for a malformed setting entry."""
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if getattr(ip, "ipv4_mapped", None):
        ip = ip.ipv4_mapped
    for entry in settings.AIRWEAVE_METRICS_ALLOWED_IPS:
        entry = entry.strip()
        if entry and ip in ipaddress.ip_network(entry, strict=False):
            return True
    return False


def metrics_exposition() -> bytes:
    """The Prometheus text exposition (format 0.0.4): this process's histograms and counters
    (merged over the processes sharing PROMETHEUS_MULTIPROC_DIR when it is set), then the
    deployment-wide figures read from the database (airweave.observability.collectors)."""
    from airweave.observability.collectors import DatabaseCollector

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        own = generate_latest(registry)
    else:
        own = generate_latest(REGISTRY)
    database = CollectorRegistry(auto_describe=False)
    database.register(DatabaseCollector())
    return own + generate_latest(database)
