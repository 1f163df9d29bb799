"""OpenTelemetry tracing: spans for each search operation and each sync stage.

With `OTEL_EXPORTER_OTLP_ENDPOINT` (the standard OpenTelemetry variable; also
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, `tracing_configure()` installs an SDK tracer provider
exporting over OTLP/HTTP in batches; `OTEL_SERVICE_NAME` names the service (default
"airweave"). Without it nothing is installed and `tracer()` is OpenTelemetry's no-op tracer: a
span costs a function call and records nothing.

Span names: `search` (attributes airweave.search.tier, .strategy, .limit, .result_count,
airweave.collection) with one child per operation, `search.<operation>` (.duration_ms,
.skipped, .provider); `sync.job` (airweave.sync_job.id, airweave.source, entity and chunk
counts, status) with children `sync.listing`, `sync.converting`, `sync.chunking`,
`sync.embedding`, `sync.writing` (one per batch of entities, slice or write).
"""
from __future__ import annotations

import logging
import os

from opentelemetry import trace

logger = logging.getLogger(__name__)
TRACER_NAME = "airweave"
_override: trace.TracerProvider | None = None
_configured = False


def tracing_configure(environ=os.environ) -> bool:
    """Install the OTLP exporter if an endpoint is configured (once per process). True when installed.

    Raises nothing: a missing exporter package or a bad endpoint is logged and tracing stays off.
    """
    global _configured
    if _configured:
        return True
    if not (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create(
            {"service.name": environ.get("OTEL_SERVICE_NAME", "airweave")}))
        # The exporter reads the endpoint, headers and timeout from the standard OTEL_* variables.
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    except Exception:
        logger.exception("OpenTelemetry tracing could not be configured; traces are off")
        return False
    _configured = True
    return True


def tracer() -> trace.Tracer:
    """The product's tracer: the provider set by `tracing_use` (tests), else the global one."""
    provider = _override or trace.get_tracer_provider()
    return provider.get_tracer(TRACER_NAME)


def tracing_use(provider: trace.TracerProvider | None) -> None:
    """Route the product's spans to `provider` (None: back to the global provider). For tests and embedding apps."""
    global _override
    _override = provider
