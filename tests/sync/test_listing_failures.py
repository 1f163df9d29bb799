"""Drill: a source that fails mid-listing, through the real HTTP client against a real local server.

Pages 1–3 answer, then page 4 answers HTTP 500 (past the retries), resets the connection, or
refuses the token (revoked halfway). Each time the job fails with the failure's category, deletes
nothing of what the last good run indexed, and the next run, once the service is well again,
completes with the same entities.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from airweave.collections.models import Entity, SourceConnection
from connectors.auth.tokens import BearerAuth
from connectors.base import BaseEntity, BaseSource, ConfigField
from connectors.services import source_connection_create, source_connection_update
from connectors.sync.services import sync_job_run, sync_job_start
from tests.connectors.saas_helpers import registered

PAGES, PER_PAGE, TOKEN = 4, 3, "drill-token-1234"


class PagedService(BaseHTTPRequestHandler):
    """GET /items?page=N (1..PAGES); `server.fault` decides what page 4 does."""

    def do_GET(self):  # noqa: N802 (http.server's name)
        page = int(parse_qs(urlsplit(self.path).query).get("page", ["1"])[0])
        fault = self.server.fault if page == PAGES else None
        if fault == "reset":
            self.connection.shutdown(2)  # the peer vanishes mid-conversation
            return
        if fault == "revoked" or self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._answer(401, {"error": "token revoked"})
        if fault == "500":
            return self._answer(500, {"error": "internal"})
        items = [{"id": f"item-{page}-{i}", "title": f"Item {page}.{i}", "body": f"Body of item {page}.{i}"}
                 for i in range(PER_PAGE)]
        self._answer(200, {"items": items, "next_page": page + 1 if page < PAGES else None})

    def _answer(self, status: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # quiet
        pass


@dataclass
class DrillItemEntity(BaseEntity):
    body: str = ""

    def textual_representation(self) -> str:
        return f"{self.name}\n\n{self.body}"


class DrillSource(BaseSource):
    def http_auth(self):
        return BearerAuth(self.credentials["api_key"])

    @property
    def base_url(self):
        return self.config["url"]

    def generate_entities(self, cursor: dict):
        page = 1
        while page:
            body = self.http.get_json("/items", params={"page": page})
            for item in body["items"]:
                yield DrillItemEntity(entity_id=item["id"], name=item["title"], body=item["body"])
            page = body["next_page"]


@pytest.fixture
def service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), PagedService)
    server.fault = None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture
def drill(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True  # the service is on loopback
    settings.AIRWEAVE_HTTP_MAX_ATTEMPTS = 2
    with registered(DrillSource, name="Drill", short_name="drill", auth_methods=("direct",),
                    auth_fields=(ConfigField("api_key", "API key", is_secret=True, required=True),),
                    config_fields=(ConfigField("url", "URL", required=True),), entity_types=(DrillItemEntity,)):
        yield


def _run(connection):
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    connection.refresh_from_db()
    return job


@pytest.mark.parametrize("fault, category", [("500", "http_error"), ("reset", "network_error"),
                                             ("revoked", "invalid_credentials")])
def test_a_failure_mid_listing_fails_the_job_and_deletes_nothing(drill, service, make_collection, fault, category):
    connection = source_connection_create(
        collection=make_collection(), short_name="drill", config={"url": f"http://127.0.0.1:{service.server_port}"},
        credentials={"api_key": TOKEN}, sync_immediately=False, for_api=False)
    first = _run(connection)
    assert (first.status, first.entities_inserted) == ("completed", PAGES * PER_PAGE), first.error
    indexed = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))

    service.fault = fault
    failed = _run(connection)
    assert failed.status == "failed" and failed.error_category == category, (failed.status, failed.error)
    assert failed.entities_deleted == 0
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == indexed
    if fault == "revoked":
        assert connection.status == SourceConnection.Status.NEEDS_REAUTH

    service.fault = None
    if fault == "revoked":  # the user authenticates again
        source_connection_update(source_connection=connection, credentials={"api_key": TOKEN}, for_api=False)
    recovered = _run(connection)
    assert recovered.status == "completed", recovered.error
    assert (recovered.entities_kept, recovered.entities_deleted) == (PAGES * PER_PAGE, 0)
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == indexed
