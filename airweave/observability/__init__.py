"""Observability: Prometheus metrics (`/metrics`) and OpenTelemetry traces (OTLP when configured).

`metrics` defines the metric objects the pipelines update (no Django, no database: every layer
may import it); `collectors` computes the job and queue figures from the database at scrape
time; `tracing` hands out the tracer (OpenTelemetry's no-op one unless an OTLP endpoint is set).
"""
