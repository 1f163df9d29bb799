"""Traces leave the process over OTLP/HTTP: `manage.py search` with `OTEL_EXPORTER_OTLP_ENDPOINT`
pointing at a local receiver, which decodes the protobuf requests the exporter sends and finds the
search's spans, with the service name and the parent links intact."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.processes import manage

pytestmark = pytest.mark.django_db(transaction=True)


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: every POST /v1/traces body is kept as a decoded request."""

    received: list[ExportTraceServiceRequest] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
        else:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            self.received.append(request)
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", Receiver.received
    finally:
        server.shutdown()
        server.server_close()


def test_a_search_exports_its_spans_over_otlp(receiver, org, make_collection, sync_folder, write_files):
    collection = make_collection(readable_id="otlp-docs")
    sync_folder(collection, write_files({"bees.md": "# Beekeeping\nThe beekeeper harvests honey from the hive."}))
    endpoint, received = receiver

    result = manage("search", "otlp-docs", "honey from the hive", "--org", org.name, "--strategy", "hybrid",
                    OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME="airweave-test",
                    OTEL_BSP_SCHEDULE_DELAY="100")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "bees.md" in result.stdout

    spans, services = [], set()
    for request in received:
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            for scope_spans in resource_spans.scope_spans:
                spans.extend(scope_spans.spans)
    assert services == {"airweave-test"}
    by_name = {span.name: span for span in spans}
    assert {"search", "search.embed_query", "search.retrieval", "search.hydrate"} <= set(by_name)
    root = by_name["search"]
    assert not root.parent_span_id
    assert all(by_name[name].parent_span_id == root.span_id and by_name[name].trace_id == root.trace_id
               for name in ("search.embed_query", "search.retrieval", "search.hydrate"))
    attributes = {a.key: a.value for a in root.attributes}
    assert attributes["airweave.search.tier"].string_value == "instant"
    assert attributes["airweave.search.result_count"].int_value == 1
