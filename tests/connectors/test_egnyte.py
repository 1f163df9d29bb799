"""The egnyte source against a fake Egnyte domain that answers only its documented requests (Bearer
token; folder listings with `list_content`, `count`, `offset`, `sort_by`; file content by path):
files of a folder tree over two listing pages, folders as breadcrumbs, an unsupported type skipped,
Egnyte's 403 "Developer Over Qps" with Retry-After waited out, a refused token marking the
connection `needs_reauth`, a missing folder a `config_error`, a sync found by search, then a second
run that keeps unchanged files without a download and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection
from connectors.sources import egnyte
from connectors.sources.egnyte import EgnyteFileEntity, EgnyteSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

SITE = "https://harbour.egnyte.com"
TOKEN = "egn-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CONFIG = {"domain": "harbour", "folder": "/Shared/Handbook"}
BODIES = {"/Shared/Handbook/storms.md": b"# Storm procedure\n\nWhen winds exceed 50 knots all sailings stop.\n",
          "/Shared/Handbook/welcome.txt": b"Welcome aboard the harbour ferries.\n",
          "/Shared/Handbook/Crew/rota.txt": b"The crew rota is published every Friday.\n",
          "/Shared/Handbook/logo.png": b"\x89PNG\r\n"}


def file(path, group):
    return {"checksum": f"sha512-{group}", "size": len(BODIES[path]), "path": path, "name": path.rsplit("/", 1)[1],
            "locked": False, "is_folder": False, "entry_id": f"e-{group}", "group_id": group,
            "last_modified": "Thu, 02 May 2024 09:00:00 GMT", "uploaded_by": "ana", "uploaded": 1714640400000,
            "num_versions": 1}


CREW = {"name": "Crew", "path": "/Shared/Handbook/Crew", "folder_id": "f-crew", "is_folder": True}
STORMS, WELCOME = file("/Shared/Handbook/storms.md", "g-1"), file("/Shared/Handbook/welcome.txt", "g-2")
LOGO, ROTA = file("/Shared/Handbook/logo.png", "g-3"), file("/Shared/Handbook/Crew/rota.txt", "g-4")


def listing(fake, path, pages):
    total = sum(len(f) + len(d) for f, d in pages)
    for n, (files, folders) in enumerate(pages):
        fake.route("GET", f"/pubapi/v1/fs{path}", headers=AUTH, query={
            "list_content": "true", "count": "2", "offset": str(2 * n), "sort_by": "name"},
            reply={"is_folder": True, "name": path.rsplit("/", 1)[1], "path": path, "folder_id": "f-x",
                   "total_count": total, "offset": 2 * n, "count": 2, "folders": list(folders), "files": list(files)})


def domain(fake, root=(([STORMS], [CREW]), ([WELCOME, LOGO], [])), crew=(([ROTA], []),)):
    listing(fake, "/Shared/Handbook", root)
    listing(fake, "/Shared/Handbook/Crew", crew)
    return {path: fake.route("GET", f"/pubapi/v1/fs-content{path}", headers=AUTH, reply=(200, {}, body))
            for path, body in BODIES.items()}


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(egnyte, "PAGE", 2)


def test_files_of_the_folder_tree_with_their_folders(vendor):
    downloads = domain(vendor(SITE))
    source = EgnyteSource(EgnyteSource.validate_config({**CONFIG, "domain": "https://harbour.egnyte.com/"}),
                          {"access_token": TOKEN})
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["g-1", "g-2", "g-3", "g-4"]
    rota = entities["g-4"]
    assert isinstance(rota, EgnyteFileEntity) and [b.name for b in rota.breadcrumbs] == ["Crew"]
    assert rota.web_url == f"{SITE}/navigate/file/g-4" and rota.updated_at.isoformat() == "2024-05-02T09:00:00+00:00"
    assert "unsupported file type" in entities["g-3"].reason
    assert downloads["/Shared/Handbook/Crew/rota.txt"].calls == 0
    assert rota.path.read_bytes() == BODIES["/Shared/Handbook/Crew/rota.txt"]


def test_egnyte_s_over_qps_403_is_waited_out(vendor):
    fake = vendor(SITE)
    limited = fake.route("GET", "/pubapi/v1/fs/Shared/Handbook", headers=AUTH, query={
        "list_content": "true", "count": "2", "offset": "0", "sort_by": "name"}, reply=[
        (403, {"Retry-After": "1", "X-Mashery-Error-Code": "ERR_403_DEVELOPER_OVER_QPS"}, "<h1>Developer Over Qps</h1>"),
        (200, {}, {"is_folder": True, "total_count": 1, "folders": [], "files": [WELCOME]})])
    source = EgnyteSource(EgnyteSource.validate_config(CONFIG), {"access_token": TOKEN})
    waits = []
    source.http.sleep = waits.append
    assert [e.entity_id for e in source.generate_entities({})] == ["g-2"] and limited.calls == 2 and waits[0] >= 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    vendor(SITE).route("GET", "/pubapi/v1/fs/Shared/Handbook", optional=("list_content", "count", "offset", "sort_by"),
                       reply=(401, {"WWW-Authenticate": 'Bearer realm="api.egnyte.com"'},
                              {"errorMessage": "Unauthorized"}))
    connection = connect(make_collection(), "egnyte", {"access_token": "egn-revoked-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert job.status == "failed" and connection.status == SourceConnection.Status.NEEDS_REAUTH
    assert job.error_category == "invalid_credentials"


def test_a_missing_folder_is_a_config_error(vendor, make_collection):
    vendor(SITE).route("GET", "/pubapi/v1/fs/Shared/Handbook", optional=("list_content", "count", "offset", "sort_by"),
                       reply=(404, {}, {"errorMessage": "Folder not found"}))
    job = run_sync(connect(make_collection(), "egnyte", {"access_token": TOKEN}, CONFIG))
    assert (job.status, job.error_category) == ("failed", "config_error")


def test_sync_search_then_unchanged_files_are_kept_without_a_download(vendor, make_collection, client):
    fake = vendor(SITE)
    domain(fake)
    connection = connect(make_collection(), "egnyte", {"access_token": TOKEN}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted, job.entities_skipped) == ("completed", 3, 1), job.error
    assert search_ids(client, "what happens to sailings in strong wind", limit=1) == ["g-1"]

    fake.routes.clear()
    downloads = domain(fake, root=(([STORMS], [CREW]),))  # welcome.txt and the logo were deleted
    job = run_sync(connection)
    assert (job.status, job.entities_kept, job.entities_deleted) == ("completed", 2, 1), job.error
    assert all(route.calls == 0 for route in downloads.values())
    assert set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == {"g-1", "g-4"}
