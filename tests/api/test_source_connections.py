"""REST /source-connections: create (sync runs inline), list, get, patch, delete, run, jobs, cancel."""
from __future__ import annotations

import uuid

import pytest

from airweave.collections.models import Entity, SyncJob
from connectors.sync.jobs import sync_job_create

CONNECTION_FIELDS = {
    "id", "organization_id", "name", "description", "short_name", "readable_collection_id", "status",
    "created_at", "modified_at", "auth", "config", "schedule", "sync", "sync_id", "entities", "error_category",
    "error_message", "federated_search",
}
LIST_ITEM_FIELDS = {
    "id", "name", "short_name", "readable_collection_id", "created_at", "modified_at", "is_authenticated",
    "entity_count", "federated_search", "auth_method", "status",
}
JOB_FIELDS = {
    "id", "source_connection_id", "status", "started_at", "completed_at", "duration_seconds", "entities_inserted",
    "entities_updated", "entities_deleted", "entities_failed", "entities_kept", "entities_skipped", "error",
    "error_category", "error_details",
}
CONNECTION_STATUSES = {"active", "pending_auth", "syncing", "error", "needs_reauth", "inactive", "pending_sync"}
FILES = {
    "guide/leave.md": "---\ntitle: Leave policy\n---\nRequest annual leave through the HR portal two weeks ahead.",
    "notes.txt": "Quarterly planning notes: roadmap, hiring and budget.",
}


@pytest.fixture
def local_root(settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    return tmp_path


@pytest.fixture
def folder(local_root, write_files):
    return write_files(FILES)


@pytest.fixture
def collection(make_collection):
    return make_collection(readable_id="docs")


def create(client, **body):
    body.setdefault("short_name", "local_files")
    body.setdefault("readable_collection_id", "docs")
    return client.post("/source-connections", body, format="json")


def assert_422(response, *loc):
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    assert isinstance(detail, list) and all(set(d) == {"loc", "msg", "type"} for d in detail)
    if loc:
        assert any(d["loc"][: len(loc)] == list(loc) for d in detail), detail
    return detail


def test_create_syncs_immediately_by_default(client, collection, folder, org):
    r = create(client, name="HR folder", description="the HR files", config={"path": str(folder)})
    assert r.status_code == 201, r.content
    body = r.json()
    assert set(body) == CONNECTION_FIELDS
    assert body["organization_id"] == str(org.id)
    assert body["name"] == "HR folder" and body["description"] == "the HR files"
    assert body["short_name"] == "local_files"
    assert body["readable_collection_id"] == "docs"
    assert body["status"] == "active"
    assert body["federated_search"] is False
    assert body["auth"]["method"] == "direct" and body["auth"]["authenticated"] is True
    assert body["config"]["path"] == str(folder.resolve())
    assert body["schedule"]["continuous"] is False
    assert body["sync_id"]
    sync = body["sync"]
    assert (sync["total_runs"], sync["successful_runs"], sync["failed_runs"]) == (1, 1, 0)
    last = sync["last_job"]
    assert last["status"] == "completed" and last["entities_inserted"] == 2 and last["error"] is None
    assert last["duration_seconds"] is not None and last["duration_seconds"] >= 0
    assert body["entities"]["total_entities"] == 2
    assert body["entities"]["by_type"]["LocalFileEntity"]["count"] == 2
    assert body["error_category"] is None and body["error_message"] is None
    assert Entity.objects.filter(source_connection_id=body["id"]).count() == 2


def test_create_without_sync(client, collection, folder):
    r = create(client, config={"path": str(folder)}, sync_immediately=False)
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["status"] == "pending_sync"
    assert body["sync"]["total_runs"] == 0 and body["sync"]["last_job"] is None
    assert body["entities"]["total_entities"] == 0
    assert body["name"]  # a default name is given


def test_create_with_schedule(client, collection, folder):
    r = create(client, config={"path": str(folder)}, sync_immediately=False, schedule={"cron": "0 * * * *"})
    assert r.status_code == 201, r.content
    assert r.json()["schedule"]["cron"] == "0 * * * *"


def test_secrets_never_appear(client, collection, folder):
    r = create(client, config={"path": str(folder)}, sync_immediately=False,
               authentication={"credentials": {"token": "s3cr3t-value-xyz"}})
    assert r.status_code == 201, r.content
    assert "s3cr3t-value-xyz" not in r.content.decode()
    assert "s3cr3t-value-xyz" not in client.get(f"/source-connections/{r.json()['id']}").content.decode()


def test_path_inside_roots_ok_outside_422(client, collection, settings, tmp_path, write_files):
    inside = write_files({"a.md": "# A\nalpha"}, root=tmp_path / "allowed" / "docs")
    outside = write_files({"b.md": "# B\nbeta"}, root=tmp_path / "elsewhere")
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path / "allowed")]
    assert create(client, config={"path": str(inside)}, sync_immediately=False).status_code == 201
    detail = assert_422(create(client, config={"path": str(outside)}, sync_immediately=False), "body", "config")
    assert "AIRWEAVE_LOCAL_ROOTS" in detail[0]["msg"]
    # A path that climbs out of the root with .. is outside too.
    sneaky = str(tmp_path / "allowed" / ".." / "elsewhere")
    assert_422(create(client, config={"path": sneaky}, sync_immediately=False), "body", "config")
    # Relative paths are refused over the API.
    assert_422(create(client, config={"path": "docs"}, sync_immediately=False), "body", "config")


def test_symlink_out_of_root_is_422(client, collection, settings, tmp_path, write_files):
    outside = write_files({"b.md": "# B\nbeta"}, root=tmp_path / "elsewhere")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "link").symlink_to(outside, target_is_directory=True)
    settings.AIRWEAVE_LOCAL_ROOTS = [str(allowed)]
    assert_422(create(client, config={"path": str(allowed / "link")}, sync_immediately=False), "body", "config")


def test_bad_config_is_422(client, collection, local_root):
    assert_422(create(client, config={}), "body", "config")  # path is required
    assert_422(create(client, config={"path": str(local_root / "missing")}), "body", "config")
    assert_422(create(client, config={"path": str(local_root), "colour": "red"}), "body", "config")
    assert_422(create(client, config={"path": str(local_root), "include": "*.md"}), "body", "config")


def test_unknown_short_name_is_422(client, collection, folder):
    assert_422(create(client, short_name="nope", config={"path": str(folder)}), "body", "short_name")


def test_unknown_fields_in_body_are_ignored_and_named_in_a_warning(client, collection, folder):
    """As the public Airweave API does (issue 12); nested fields are named by their path."""
    r = create(client, config={"path": str(folder)}, colour="blue", sync_immediately=False)
    assert r.status_code == 201 and r["Warning"] == '299 - "Unknown fields ignored: colour"'
    r = create(client, config={"path": str(folder)}, schedule={"cron": "0 3 * * *", "every": 5}, sync_immediately=False)
    assert r.status_code == 201 and r["Warning"] == '299 - "Unknown fields ignored: schedule.every"'
    assert r.json()["schedule"]["cron"] == "0 3 * * *"


def test_unknown_collection_is_404(client, collection, folder):
    r = create(client, readable_collection_id="nope", config={"path": str(folder)})
    assert r.status_code == 404


def test_malformed_json_is_422(client, collection):
    r = client.post("/source-connections", data="{not json", content_type="application/json")
    assert r.status_code == 422
    assert isinstance(r.json()["detail"], list)


def test_list_filtered_by_collection(client, make_collection, local_root, write_files):
    make_collection(readable_id="docs")
    make_collection(readable_id="other", name="Other documents")
    a = write_files({"a.md": "alpha"}, root=local_root / "a")
    b = write_files({"b.md": "beta"}, root=local_root / "b")
    c1 = create(client, name="first", config={"path": str(a)}).json()
    c2 = create(client, name="second", readable_collection_id="other", config={"path": str(b)},
                sync_immediately=False).json()

    r = client.get("/source-connections")
    assert r.status_code == 200
    items = r.json()
    assert [i["id"] for i in items] == [c1["id"], c2["id"]]
    assert all(set(i) == LIST_ITEM_FIELDS for i in items)
    first = items[0]
    assert first["entity_count"] == 1 and first["readable_collection_id"] == "docs"
    assert first["auth_method"] == "direct" and first["is_authenticated"] is True
    assert first["status"] in CONNECTION_STATUSES
    assert [i["id"] for i in client.get("/source-connections", {"collection": "other"}).json()] == [c2["id"]]
    assert [i["id"] for i in client.get("/source-connections", {"collection": "docs"}).json()] == [c1["id"]]
    assert client.get("/source-connections", {"collection": "nope"}).json() == []
    assert [i["id"] for i in client.get("/source-connections", {"skip": 1, "limit": 1}).json()] == [c2["id"]]


def test_get_patch_delete(client, collection, folder, local_root, write_files):
    conn = create(client, name="Before", config={"path": str(folder)}).json()
    url = f"/source-connections/{conn['id']}"
    got = client.get(url)
    assert got.status_code == 200 and got.json()["id"] == conn["id"] and set(got.json()) == CONNECTION_FIELDS

    other = write_files({"z.md": "zeta"}, root=local_root / "other")
    r = client.patch(url, {"name": "After", "description": "new", "config": {"path": str(other)},
                           "schedule": {"cron": "0 3 * * *"}}, format="json")
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["name"] == "After" and body["description"] == "new"
    assert body["config"]["path"] == str(other.resolve())
    assert body["schedule"]["cron"] == "0 3 * * *"
    r = client.patch(url, {"short_name": "x"}, format="json")  # not changeable: ignored and named (issue 12)
    assert r.status_code == 200 and r.json()["short_name"] == "local_files" and "short_name" in r["Warning"]
    assert_422(client.patch(url, {"config": {"path": "/definitely/not/allowed"}}, format="json"), "body", "config")
    assert client.get(url).json()["config"]["path"] == str(other.resolve())

    r = client.delete(url)
    assert r.status_code == 200 and r.json()["id"] == conn["id"]
    assert client.get(url).status_code == 404
    assert not Entity.objects.filter(source_connection_id=conn["id"]).exists()
    assert client.delete(url).status_code == 404


def test_unknown_ids_are_404(client, collection):
    missing = uuid.uuid4()
    assert client.get(f"/source-connections/{missing}").status_code == 404
    assert client.post(f"/source-connections/{missing}/run").status_code == 404
    assert client.get(f"/source-connections/{missing}/jobs").status_code == 404


def test_run_returns_a_job_and_jobs_lists_it(client, collection, folder):
    conn = create(client, config={"path": str(folder)}).json()
    r = client.post(f"/source-connections/{conn['id']}/run")
    assert r.status_code == 200, r.content
    job = r.json()
    assert set(job) == JOB_FIELDS
    assert job["source_connection_id"] == conn["id"]
    assert job["status"] == "completed"  # django-q2 runs the task inline in tests
    assert (job["entities_inserted"], job["entities_kept"]) == (0, 2)

    r = client.post(f"/source-connections/{conn['id']}/run?force_full_sync=true")
    assert r.status_code == 200 and r.json()["status"] == "completed"

    jobs = client.get(f"/source-connections/{conn['id']}/jobs").json()
    assert len(jobs) == 3
    assert all(set(j) == JOB_FIELDS for j in jobs)
    assert jobs[1]["id"] == job["id"]  # newest first
    assert jobs[-1]["entities_inserted"] == 2
    assert len(client.get(f"/source-connections/{conn['id']}/jobs", {"limit": 1}).json()) == 1
    assert_422(client.get(f"/source-connections/{conn['id']}/jobs", {"limit": 0}))
    assert_422(client.post(f"/source-connections/{conn['id']}/run?force_full_sync=maybe"))


def test_run_while_a_job_is_active_is_409(client, collection, folder):
    conn = create(client, config={"path": str(folder)}, sync_immediately=False).json()
    from airweave.collections.models import Sync

    active = sync_job_create(sync=Sync.objects.get(source_connection_id=conn["id"]))
    r = client.post(f"/source-connections/{conn['id']}/run")
    assert r.status_code == 409
    assert isinstance(r.json()["detail"], str)
    assert SyncJob.objects.filter(source_connection_id=conn["id"]).count() == 1
    active.refresh_from_db()
    assert active.status == "pending"


def test_cancel_a_pending_job(client, collection, folder):
    conn = create(client, config={"path": str(folder)}, sync_immediately=False).json()
    from airweave.collections.models import Sync

    job = sync_job_create(sync=Sync.objects.get(source_connection_id=conn["id"]))
    r = client.post(f"/source-connections/{conn['id']}/jobs/{job.id}/cancel")
    assert r.status_code == 200, r.content
    body = r.json()
    assert set(body) == JOB_FIELDS
    assert body["id"] == str(job.id) and body["status"] == "cancelled"
    assert body["completed_at"] is not None
    # Idempotent: cancelling again changes nothing and still answers the job.
    again = client.post(f"/source-connections/{conn['id']}/jobs/{job.id}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    # A new run is possible once the job is cancelled.
    assert client.post(f"/source-connections/{conn['id']}/run").json()["status"] == "completed"


def test_cancel_a_completed_job_leaves_it_completed(client, collection, folder):
    conn = create(client, config={"path": str(folder)}).json()
    job_id = conn["sync"]["last_job"]["id"]
    r = client.post(f"/source-connections/{conn['id']}/jobs/{job_id}/cancel")
    assert r.status_code == 200
    assert r.json()["status"] == "completed"


def test_cancel_job_of_another_connection_is_404(client, collection, local_root, write_files):
    a = write_files({"a.md": "alpha"}, root=local_root / "a")
    b = write_files({"b.md": "beta"}, root=local_root / "b")
    c1 = create(client, config={"path": str(a)}).json()
    c2 = create(client, config={"path": str(b)}).json()
    job_of_c2 = c2["sync"]["last_job"]["id"]
    assert client.post(f"/source-connections/{c1['id']}/jobs/{job_of_c2}/cancel").status_code == 404
    assert client.post(f"/source-connections/{c1['id']}/jobs/{uuid.uuid4()}/cancel").status_code == 404


def test_source_error_marks_connection_error(client, collection, local_root, write_files):
    root = write_files({"a.md": "alpha"}, root=local_root / "vanishing")
    conn = create(client, config={"path": str(root)}, sync_immediately=False).json()
    (root / "a.md").unlink()
    root.rmdir()
    job = client.post(f"/source-connections/{conn['id']}/run").json()
    assert job["status"] == "failed"
    assert job["error_category"] == "config_error"
    assert "does not exist" in job["error"]
    body = client.get(f"/source-connections/{conn['id']}").json()
    assert body["status"] == "error"
    assert body["error_category"] == "config_error" and body["error_message"]
    assert body["sync"]["failed_runs"] == 1
    assert client.get("/collections/docs").json()["status"] == "ERROR"


def test_cancel_a_running_job_answers_cancelling(client, collection, folder):
    conn = create(client, config={"path": str(folder)}, sync_immediately=False).json()
    from airweave.collections.models import Sync

    job = sync_job_create(sync=Sync.objects.get(source_connection_id=conn["id"]))
    SyncJob.objects.filter(pk=job.pk).update(status="running")
    r = client.post(f"/source-connections/{conn['id']}/jobs/{job.id}/cancel")
    assert r.status_code == 200
    assert r.json()["status"] == "cancelling"
    assert client.post(f"/source-connections/{conn['id']}/run").status_code == 409  # still active


def test_huge_skip_is_not_a_server_error(client, collection):
    assert client.get("/source-connections", {"skip": 10**20}).status_code in (200, 422)


def test_nul_in_collection_parameter_is_not_a_server_error(client, collection):
    assert client.get("/source-connections", {"collection": "a\x00b"}).status_code in (200, 422)


def test_nul_in_config_is_422(client, collection, folder):
    r = create(client, config={"path": str(folder), "include": ["*.md\x00"]}, sync_immediately=False)
    assert r.status_code == 422


def test_unresolvable_home_path_is_a_422(client, make_collection):
    make_collection(readable_id="home-path")
    response = client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "home-path",
                                                   "config": {"path": "~no-such-user-here/docs"}}, format="json")
    assert response.status_code == 422, response.content
    assert "cannot resolve" in response.json()["detail"][0]["msg"]


def test_credentials_are_checked_against_the_declared_auth_fields(client, collection, tmp_path):
    import tests.access.sources  # noqa: F401  (registers acl_wiki: one required secret, api_token)

    export = tmp_path / "wiki.json"
    export.write_text('{"pages": []}')
    body = {"short_name": "acl_wiki", "config": {"export_path": str(export)}, "sync_immediately": False}
    detail = assert_422(create(client, **body, authentication={"credentials": {"api_tok": "x"}}),
                        "body", "authentication")
    assert "api_tok" in detail[0]["msg"] and "api_token" in detail[0]["msg"]
    assert_422(create(client, **body, authentication={"credentials": {"api_token": 7}}), "body", "authentication")
    assert create(client, **body, authentication={"credentials": {"api_token": "x"}}).status_code == 201
