"""Drill 5a: the REST API fuzzed against its own /openapi.json (schemathesis), authenticated.

Every operation of the schema gets up to EXAMPLES generated requests (valid and invalid bodies,
parameters and ids), sent to a real daphne on loopback. Any outbound HTTP the product would
make (validating a fake token, a webhook) goes to a dead loopback proxy, so nothing leaves the
machine. Every answer must be other than 5xx and conform to the schema: status code documented,
content type, body schema, headers.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import (
    content_type_conformance, not_a_server_error, response_headers_conformance, response_schema_conformance,
    status_code_conformance,
)

from tests.processes import free_port, start_daphne

EXAMPLES = int(os.environ.get("AIRWEAVE_FUZZ_EXAMPLES", "50"))  # per operation; 48 operations
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker, tmp_path_factory):
    from airweave.tenancy.models import Organization
    from airweave.tenancy.services import api_key_create

    root = tmp_path_factory.mktemp("fuzz-root")
    (root / "a.md").write_text("Fuzzing finds what reviews miss.", encoding="utf-8")
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    env = {"AIRWEAVE_LOCAL_ROOTS": str(root), "AIRWEAVE_RATE_LIMIT": "", "AIRWEAVE_SEARCH_RATE_LIMIT": "",
           "HTTP_PROXY": dead_proxy, "HTTPS_PROXY": dead_proxy, "http_proxy": dead_proxy, "https_proxy": dead_proxy,
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", "DEBUG": "0"}
    with django_db_blocker.unblock():
        org = Organization.objects.create(name=f"fuzz-{uuid.uuid4().hex[:8]}")
        key = api_key_create(organization=org, name="fuzz").key
    server, url = start_daphne(AIRWEAVE_WARM_UP="1", **env)
    yield {"url": url, "key": key}
    log = server.stop()
    with django_db_blocker.unblock():
        org.delete()
    assert "Traceback" not in log, log[log.index("Traceback") - 300:][:4000]


@pytest.mark.slow
def test_every_operation_answers_without_5xx_and_within_its_schema(live):
    schema = schemathesis.openapi.from_url(f"{live['url']}/openapi.json")
    session = requests.Session()
    session.headers["X-API-Key"] = live["key"]
    sent, statuses, failures = Counter(), Counter(), {}
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=EXAMPLES, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def exercise(case):
            response = case.call(base_url=live["url"], session=session, timeout=60)
            sent[operation.label] += 1
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as failure:  # keep going: every operation's faults in one report
                found = failures.setdefault(operation.label, {})
                if len(found) < 3:
                    found.setdefault(str(failure)[:200], str(failure)[:1500])

        exercise()
    seconds = time.monotonic() - started
    summary = {"operations": len(sent), "requests": sum(sent.values()), "seconds": round(seconds, 1),
               "statuses": dict(sorted(statuses.items())), "server_errors": sum(n for s, n in statuses.items() if s >= 500),
               "schema_failures": len(failures)}
    print(json.dumps(summary))
    assert not failures, "\n\n".join(f"{label}\n" + "\n".join(found.values()) for label, found in sorted(failures.items()))
    assert summary["server_errors"] == 0 and summary["requests"] >= 2000, summary
