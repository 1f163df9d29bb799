"""The canvas source against a fake Canvas that answers only its documented requests (Bearer token;
`per_page`, `enrollment_state`, `sort`/`order` of pages, `only_announcements`; `Link` pagination):
pages (over two pages), assignments and announcements of a course, an unpublished page left out,
Canvas's 403 "Rate Limit Exceeded" waited out, a refused token marking the connection
`needs_reauth`, a sync found by search, then an incremental run that reads only the changed page
and removes a deleted assignment."""
from __future__ import annotations

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.canvas import CanvasAnnouncementEntity, CanvasAssignmentEntity, CanvasPageEntity, CanvasSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.instructure.com"
TOKEN = "7~Zm9vYmFyYmF6cXV4MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = {"base_url": SITE}
COURSE = {"id": 101, "name": "Seamanship 1", "course_code": "SEA-101", "workflow_state": "available",
          "enrollment_term_id": 1, "created_at": "2024-01-10T09:00:00Z", "start_at": None}


def page(pid, url, title, updated, published=True):
    return {"page_id": pid, "url": url, "title": title, "created_at": "2024-02-01T09:00:00Z", "updated_at": updated,
            "published": published, "front_page": False, "editing_roles": "teachers",
            "html_url": f"{SITE}/courses/101/pages/{url}"}


KNOTS = page(1, "knots", "Knots", "2024-05-03T09:00:00Z")
TIDES = page(2, "tides", "Tides", "2024-05-01T09:00:00Z")
DRAFT = page(3, "draft", "Draft", "2024-05-02T09:00:00Z", published=False)
BODIES = {"knots": "<p>A bowline makes a fixed loop that will not slip under load.</p>",
          "tides": "<p>Spring tides come after a full or new moon.</p>"}
ESSAY = {"id": 501, "name": "Storm essay", "description": "<p>Explain why sailings stop above 50 knots.</p>",
         "due_at": "2024-06-01T23:59:00Z", "points_possible": 20.0, "submission_types": ["online_text_entry"],
         "published": True, "created_at": "2024-04-01T09:00:00Z", "updated_at": "2024-04-02T09:00:00Z",
         "html_url": f"{SITE}/courses/101/assignments/501"}
QUIZ = {**ESSAY, "id": 502, "name": "Buoyage quiz", "description": "<p>Name the cardinal marks.</p>",
        "html_url": f"{SITE}/courses/101/assignments/502"}
NEWS = {"id": 701, "title": "Pool session moved", "message": "<p>The sea survival pool session moves to Thursday.</p>",
        "posted_at": "2024-05-02T12:00:00Z", "last_reply_at": None, "html_url": f"{SITE}/courses/101/announcements/701",
        "author": {"id": 9, "display_name": "Captain Okafor"}, "user_name": "Captain Okafor"}


def link(path, n):
    return {"Link": f'<{SITE}/api/v1{path}?page={n + 1}&per_page=100>; rel="next", '
                    f'<{SITE}/api/v1{path}?page=1&per_page=100>; rel="first"'}


def school(fake, pages=((KNOTS, DRAFT), (TIDES,)), bodies=BODIES, assignments=(ESSAY, QUIZ)):
    fake.route("GET", "/api/v1/courses", query={"enrollment_state": "active", "per_page": "100"}, headers=AUTH,
               reply=[COURSE])
    path = "/courses/101/pages"
    for n, chunk in enumerate(pages, start=1):
        query = {"sort": "updated_at", "order": "desc", "per_page": "100"} if n == 1 else {"page": str(n),
                                                                                            "per_page": "100"}
        fake.route("GET", f"/api/v1{path}", query=query, headers=AUTH,
                   reply=(200, link(path, n) if n < len(pages) else {}, list(chunk)))
    for url, body in bodies.items():
        fake.route("GET", f"/api/v1/courses/101/pages/{url}", headers=AUTH, reply={"url": url, "body": body})
    fake.route("GET", "/api/v1/courses/101/assignments", query={"per_page": "100"}, headers=AUTH,
               reply=list(assignments))
    fake.route("GET", "/api/v1/courses/101/discussion_topics", query={"only_announcements": "true",
                                                                      "per_page": "100"}, headers=AUTH, reply=[NEWS])


def test_pages_assignments_and_announcements_of_a_course(vendor):
    school(vendor(SITE))
    source = CanvasSource(CanvasSource.validate_config(CONFIG), {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["announcement:101:701", "assignment:101:501", "assignment:101:502", "page:101:1",
                                "page:101:2"]
    knots = entities["page:101:1"]
    assert isinstance(knots, CanvasPageEntity) and knots.text.startswith("A bowline")
    assert [b.name for b in knots.breadcrumbs] == ["Seamanship 1"] and knots.web_url.endswith("/pages/knots")
    essay = entities["assignment:101:501"]
    assert isinstance(essay, CanvasAssignmentEntity) and "points possible: 20.0" in essay.details
    news = entities["announcement:101:701"]
    assert isinstance(news, CanvasAnnouncementEntity) and news.details == "Announcement by Captain Okafor"
    assert source.is_full_listing() and source.next_cursor() == {"since": {"101": "2024-05-03T09:00:00Z"}}


def test_canvas_s_rate_limit_403_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/api/v1/courses", query={"enrollment_state": "active", "per_page": "100"},
                         headers=AUTH, reply=[(403, {"X-Rate-Limit-Remaining": "0.0"}, "403 Forbidden (Rate Limit "
                                                                                       "Exceeded)"), (200, {}, [])])
    source = CanvasSource(CanvasSource.validate_config(CONFIG), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert list(source.generate_entities({})) == [] and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(SITE).route("GET", "/api/v1/courses", query={"enrollment_state": "active", "per_page": "100"},
                       reply=(401, {"WWW-Authenticate": 'Bearer realm="canvas-lms"'},
                              {"errors": [{"message": "Invalid access token."}]}))
    connection = connect(make_collection(), "canvas", {"access_token": "7~revoked0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_reads_only_the_changed_page(vendor, make_collection, client):
    fake = vendor(SITE)
    school(fake)
    connection = connect(make_collection(), "canvas", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 5), job.error
    assert search_ids(client, "which knot makes a loop that does not slip", limit=1) == ["page:101:1"]

    fake.routes.clear()
    edited = {**TIDES, "updated_at": "2024-05-04T09:00:00Z"}
    school(fake, pages=((edited, KNOTS),), bodies={"tides": "<p>Neap tides come at the quarter moons.</p>"},
           assignments=(ESSAY,))  # the quiz was deleted
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"announcement:101:701", "assignment:101:501", "page:101:1", "page:101:2"}
    assert search_ids(client, "when do neap tides come", limit=1) == ["page:101:2"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"101": "2024-05-04T09:00:00Z"}
