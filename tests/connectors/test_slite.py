"""The slite source against a fake Slite API that answers only its documented requests (the
`x-slite-api-key` header; `GET /notes` paged by `cursor`; `GET /notes/{id}?format=md`): notes over
two listing pages with nested breadcrumbs and an archived note left out, a 429 with Retry-After
waited out, a refused key marking the connection `needs_reauth`, a sync found by search, then an
incremental run that reads only the edited note and removes a deleted one."""
from __future__ import annotations

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.slite import SliteNoteEntity, SliteSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

API = "https://api.slite.com/v1"
KEY = "slite_4b9c2e7f1a0d4c8e9f6a5b3c2d1e0f9a"
AUTH = {"x-slite-api-key": KEY}


def note(nid, title, edited, parent=None, archived=None, content=""):
    return {"id": nid, "title": title, "parentNoteId": parent, "url": f"https://harbour.slite.com/app/docs/{nid}",
            "createdAt": "2024-02-01T09:00:00.000Z", "updatedAt": edited, "lastEditedAt": edited,
            "archivedAt": archived, "reviewState": "Verified", "attributes": [], "columns": [],
            **({"content": content} if content else {})}


HANDBOOK = note("hB1kQz0aP", "Handbook", "2024-05-01T09:00:00.000Z")
STORMS = note("sT2mRx8bQ", "Storm procedure", "2024-05-03T09:00:00.000Z", parent="hB1kQz0aP")
ROTA = note("rO3nTy7cR", "Crew rota", "2024-04-20T09:00:00.000Z", parent="hB1kQz0aP")
OLD = note("oL4pUv6dS", "Winter timetable 2019", "2019-11-01T09:00:00.000Z", archived="2020-04-01T09:00:00.000Z")
CONTENT = {"hB1kQz0aP": "Everything about running the harbour.",
           "sT2mRx8bQ": "When winds exceed 50 knots all sailings are suspended and passengers rebooked.",
           "rO3nTy7cR": "The crew rota is published every Friday."}


def workspace(fake, pages=((STORMS, HANDBOOK), (ROTA, OLD)), content=CONTENT):
    for n, chunk in enumerate(pages):
        more = n + 1 < len(pages)
        fake.route("GET", "/notes", query={"cursor": f"c{n}"} if n else {}, headers=AUTH,
                   reply={"notes": list(chunk), "total": sum(map(len, pages)), "hasNextPage": more,
                          "nextCursor": f"c{n + 1}" if more else None})
    by_id = {n["id"]: n for chunk in pages for n in chunk}
    for nid, text in content.items():
        fake.route("GET", f"/notes/{nid}", query={"format": "md"}, headers=AUTH, reply={**by_id[nid], "content": text})


def test_notes_over_two_pages_with_their_parents_and_archived_ones_left_out(vendor):
    workspace(vendor(API))
    source = SliteSource(SliteSource.validate_config({}), {"api_key": KEY})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["note:hB1kQz0aP", "note:rO3nTy7cR", "note:sT2mRx8bQ"]
    storms = entities["note:sT2mRx8bQ"]
    assert isinstance(storms, SliteNoteEntity) and storms.text == CONTENT["sT2mRx8bQ"]
    assert [b.name for b in storms.breadcrumbs] == ["Handbook"] and storms.web_url.endswith("/docs/sT2mRx8bQ")
    assert storms.updated_at.isoformat() == "2024-05-03T09:00:00+00:00"
    assert source.is_full_listing() and source.next_cursor() == {"since": {"notes": STORMS["lastEditedAt"]}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(API)
    limited = fake.route("GET", "/notes", headers=AUTH, reply=[
        (429, {"Retry-After": "0"}, {"message": "Too many requests"}),
        (200, {}, {"notes": [HANDBOOK], "hasNextPage": False, "nextCursor": None})])
    workspace(fake, pages=((HANDBOOK,),), content={"hB1kQz0aP": "x"})
    source = SliteSource(SliteSource.validate_config({}), {"api_key": KEY})
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 1 and limited.calls == 2 and waits == [0]


def test_a_refused_key_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(API).route("GET", "/notes", reply=(401, {}, {"message": "Invalid API key", "code": "unauthorized"}))
    connection = connect(make_collection(), "slite", {"api_key": "slite_revoked_0123456789"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_sync_search_then_an_incremental_run_reads_only_the_edited_note(vendor, make_collection, client):
    fake = vendor(API)
    workspace(fake)
    connection = connect(make_collection(), "slite", {"api_key": KEY})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["note:sT2mRx8bQ"]

    fake.routes.clear()
    edited = {**ROTA, "lastEditedAt": "2024-05-04T09:00:00.000Z", "updatedAt": "2024-05-04T09:00:00.000Z"}
    workspace(fake, pages=((HANDBOOK, edited, OLD),),  # the storm note was deleted
              content={"rO3nTy7cR": "The crew rota is now published every Thursday."})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    left = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert left == {"note:hB1kQz0aP", "note:rO3nTy7cR"}
    assert search_ids(client, "when is the crew rota published", limit=1) == ["note:rO3nTy7cR"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"] == {"notes": "2024-05-04T09:00:00.000Z"}
