"""The servicenow source against a fake instance that answers only the Table API's documented
requests (basic auth; `sysparm_query`, `sysparm_display_value=all`, `sysparm_exclude_reference_link`,
`sysparm_fields`, `sysparm_limit`; `Link` paging by `sysparm_offset`): published articles over two
pages with their knowledge base and category as breadcrumbs, incidents, a 429 with Retry-After
waited out, a refused login marking the connection `needs_reauth`, a sync found by search, an
incremental run from a day before the mark that removes a retired article, and the periodic full
listing."""
from __future__ import annotations

import base64

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources import servicenow
from connectors.sources.servicenow import TABLES, ServiceNowArticleEntity, ServiceNowIncidentEntity, ServiceNowSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.service-now.com"
USER, PASSWORD = "svc.airweave", "N0w-p4ssw0rd-harbour"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}
CONFIG = {"instance_url": SITE + "/"}
COMMON = {"sysparm_display_value": "all", "sysparm_exclude_reference_link": "true", "sysparm_limit": "2"}


def f(value, display=None):
    return {"display_value": value if display is None else display, "value": value}


def article(sys_id, number, title, html, updated, state="published"):
    return {"sys_id": f(sys_id), "number": f(number), "short_description": f(title), "text": f(html),
            "kb_knowledge_base": f("a7e8a78bff0221009b20ffffffffff17", "IT"),
            "kb_category": f("c2e8a78bff0221009b20ffffffffff20", "Ferries"), "workflow_state": f(state, state.title()),
            "author": f("6816f79cc0a8016401c5a33be04be441", "Ana Lima"), "sys_view_count": f("12"),
            "sys_created_on": f("2024-02-01 09:00:00", "2024-02-01 01:00:00"),
            "sys_updated_on": f(updated, updated.replace(" 09:", " 01:"))}


STORMS = article("0a1b2c3d4e5f60718293a4b5c6d7e8f9", "KB0010001", "Storm procedure",
                 "<p>When winds exceed <b>50 knots</b> all sailings are suspended and passengers rebooked.</p>",
                 "2024-05-03 09:00:00")
ROTA = article("1a1b2c3d4e5f60718293a4b5c6d7e8f9", "KB0010002", "Crew rota", "<p>The crew rota is published every "
               "Friday.</p>", "2024-04-20 09:00:00")
REFUNDS = article("2a1b2c3d4e5f60718293a4b5c6d7e8f9", "KB0010003", "Refunds", "<p>Refunds take five days.</p>",
                  "2024-04-25 09:00:00")
INCIDENT = {"sys_id": f("9d385017c611228701d22104cc95c371"), "number": f("INC0010042"),
            "short_description": f("Ticket gates at pier 2 reject QR codes"),
            "description": f("Since the firmware update the gates at pier 2 refuse every QR ticket."),
            "state": f("6", "Resolved"), "priority": f("2", "2 - High"), "category": f("hardware", "Hardware"),
            "assignment_group": f("287ebd7da9fe198100f92cc8d1d2154e", "Network"), "assigned_to": f("", ""),
            "close_notes": f("Rolled the gate firmware back to 4.2."), "opened_at": f("2024-05-02 07:00:00"),
            "resolved_at": f("2024-05-02 11:00:00"), "sys_created_on": f("2024-05-02 07:00:00"),
            "sys_updated_on": f("2024-05-02 11:00:00")}


def table(fake, name, pages, query):
    params = {**COMMON, "sysparm_query": query, "sysparm_fields": TABLES[name][1]}
    for n, page in enumerate(pages):
        link = {}
        if n + 1 < len(pages):
            link = {"Link": f'<{SITE}/api/now/table/{TABLES[name][0]}?sysparm_limit=2&sysparm_offset={2 * (n + 1)}>;'
                            f'rel="next"', "X-Total-Count": str(sum(map(len, pages)))}
        fake.route("GET", f"/api/now/table/{TABLES[name][0]}", headers=AUTH,
                   query=params if n == 0 else {"sysparm_limit": "2", "sysparm_offset": str(2 * n)},
                   reply=(200, link, {"result": list(page)}))


def instance(fake, articles=((STORMS, ROTA), (REFUNDS,)), incidents=((INCIDENT,),), since=None):
    table(fake, "knowledge", articles, f"sys_updated_on>={since}^ORDERBYsys_updated_on" if since
          else "workflow_state=published^ORDERBYsys_updated_on")
    table(fake, "incidents", incidents, f"sys_updated_on>={since}^ORDERBYsys_updated_on" if since
          else "ORDERBYsys_updated_on")


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(servicenow, "PAGE", 2)


def test_articles_over_two_pages_and_incidents(vendor):
    instance(vendor(SITE))
    source = ServiceNowSource(ServiceNowSource.validate_config(CONFIG), {"username": USER, "password": PASSWORD})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert len(entities) == 4
    storms = entities["kb_knowledge:0a1b2c3d4e5f60718293a4b5c6d7e8f9"]
    assert isinstance(storms, ServiceNowArticleEntity) and "50 knots" in storms.text and "<b>" not in storms.text
    assert [b.name for b in storms.breadcrumbs] == ["IT", "Ferries"]
    assert storms.web_url == f"{SITE}/kb_view.do?sysparm_article=KB0010001"
    assert storms.updated_at.isoformat() == "2024-05-03T09:00:00+00:00"  # the stored value (UTC), not the display
    incident = entities["incident:9d385017c611228701d22104cc95c371"]
    assert isinstance(incident, ServiceNowIncidentEntity) and incident.raw_source_fields["state"] == "Resolved"
    assert "assignment group: Network" in incident.details and incident.resolution.startswith("Rolled")
    assert incident.web_url == f"{SITE}/incident.do?sys_id=9d385017c611228701d22104cc95c371"
    cursor = source.next_cursor()
    assert source.is_full_listing() and cursor["since"] == {"kb_knowledge": "2024-05-03 09:00:00",
                                                            "incident": "2024-05-02 11:00:00"}


def test_credentials_and_the_instance_url_are_checked():
    with pytest.raises(ValueError, match="'password' are both required"):
        ServiceNowSource.validate_auth({"username": USER})
    with pytest.raises(ValueError, match="instance_url"):
        ServiceNowSource.validate_config({"instance_url": "harbour.service-now.com"})
    with pytest.raises(ValueError, match="object_types"):
        ServiceNowSource.validate_config({**CONFIG, "object_types": ["changes"]})


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/now/table/incident", headers=AUTH, optional=list(COMMON) + [
        "sysparm_query", "sysparm_fields"], reply=[(429, {"Retry-After": "0"}, {"error": {
            "message": "Rate limit exceeded", "detail": "Rate limit of 100 per hour exceeded"}, "status": "failure"}),
            (200, {}, {"result": [INCIDENT]})])
    source = ServiceNowSource(ServiceNowSource.validate_config({**CONFIG, "object_types": ["incidents"]}),
                              {"username": USER, "password": PASSWORD})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_login_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(SITE).route("GET", "/api/now/table/kb_knowledge", optional=list(COMMON) + ["sysparm_query", "sysparm_fields"],
                       reply=(401, {}, {"error": {"message": "User Not Authenticated",
                                                  "detail": "Required to provide Auth information"},
                                        "status": "failure"}))
    connection = connect(make_collection(), "servicenow", {"username": USER, "password": "wrong-password-123"},
                         CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_removes_a_retired_article(vendor, make_collection, client):
    fake = vendor(SITE)
    instance(fake)
    connection = connect(make_collection(), "servicenow", {"username": USER, "password": PASSWORD}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 4), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == \
        ["kb_knowledge:0a1b2c3d4e5f60718293a4b5c6d7e8f9"]

    fake.routes.clear()
    retired = {**ROTA, "workflow_state": f("retired", "Retired"), "sys_updated_on": f("2024-05-04 09:00:00")}
    # a day before each table's mark: the storm article (read again, kept) and the retired rota
    table(fake, "knowledge", [[STORMS, retired]], "sys_updated_on>=2024-05-02 09:00:00^ORDERBYsys_updated_on")
    table(fake, "incidents", [[INCIDENT]], "sys_updated_on>=2024-05-01 11:00:00^ORDERBYsys_updated_on")
    job = run_sync(connection)
    assert (job.status, job.entities_deleted, job.entities_inserted) == ("completed", 1, 0), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "kb_knowledge:1a1b2c3d4e5f60718293a4b5c6d7e8f9" not in left and len(left) == 3
    data = SyncCursor.objects.get(sync_id=job.sync_id).data
    assert data["since"]["kb_knowledge"] == "2024-05-04 09:00:00" and data["full_at"] > 0


def test_every_full_sync_days_a_run_is_a_full_listing(vendor):
    instance(vendor(SITE))
    source = ServiceNowSource(ServiceNowSource.validate_config(CONFIG), {"username": USER, "password": PASSWORD})
    old = {"since": {"kb_knowledge": "2024-05-03 09:00:00", "incident": "2024-05-02 11:00:00"}, "full_at": 1.0}
    assert len(list(source.generate_entities(old))) == 4 and source.is_full_listing()
