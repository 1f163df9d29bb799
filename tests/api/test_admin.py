"""The admin as the operator console: every model listed, source connection forms generated from the
source's declaration (local_files and the test-only acl_wiki, test_tracker and acl_directory), sync
actions, job pages, cron schedules and django-q2's pages, without leaking secrets."""
from __future__ import annotations

import sys
import types

import pytest
from django.contrib.messages import get_messages
from django_q.models import Schedule

import tests.access.sources  # noqa: F401  (registers acl_wiki, acl_directory, test_tracker)
from airweave.collections.models import AccessGroupMembership, Chunk, Collection, Entity, SourceConnection, Sync, SyncJob
from airweave.crypto import decrypt_json
from airweave.tenancy.models import User
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_start

ADD = "/admin/collections/sourceconnection/add/"


@pytest.fixture
def admin_client(db):
    from django.test import Client

    User.objects.create_superuser("ops@example.com", "pw-123456")
    c = Client()
    c.login(email="ops@example.com", password="pw-123456")
    return c


def change_url(obj) -> str:
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/"


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def form_errors(response) -> dict:
    form = response.context["adminform"].form
    return {k: " ".join(v) for k, v in form.errors.items()}


@pytest.mark.parametrize("path", [
    "tenancy/user", "tenancy/organization", "tenancy/membership", "tenancy/apikey", "collections/collection",
    "collections/sourceconnection", "collections/sync", "collections/syncjob", "collections/synccursor",
    "collections/entity", "collections/chunk", "collections/accessgroupmembership", "collections/keywordstats",
    "django_q/schedule", "django_q/success", "django_q/failure", "django_q/ormq",
])
def test_admin_changelists_render(admin_client, path):
    assert admin_client.get(f"/admin/{path}/").status_code == 200


def test_every_row_of_a_synced_collection_has_a_page(admin_client, make_collection, sync_folder, write_files):
    connection, job = sync_folder(make_collection(), write_files({"a.md": "alpha", "b/c.md": "gamma"}))
    for obj in (connection, connection.collection, connection.sync, job, Entity.objects.first(),
                Chunk.objects.first(), connection.sync.cursor):
        response = admin_client.get(change_url(obj))
        assert response.status_code == 200, (obj, response.status_code)
    for path, term in (("entity", "c.md"), ("chunk", "b/c.md"), ("syncjob", str(job.id)[:8])):
        assert admin_client.get(f"/admin/collections/{path}/", {"q": term}).status_code == 200
    assert b"embedding" not in admin_client.get(change_url(Chunk.objects.first())).content


def test_the_first_step_of_adding_a_connection_picks_its_source(admin_client):
    page = admin_client.get(ADD).content.decode()
    for short_name in ("local_files", "acl_wiki", "acl_directory", "test_tracker"):
        assert f"?source={short_name}" in page


# --- local_files -----------------------------------------------------------------------------------

def test_local_files_form_validates_and_creates_through_the_service(admin_client, make_collection, write_files,
                                                                    tmp_path):
    collection = make_collection()
    form = admin_client.get(ADD, {"source": "local_files"})
    assert {"config__path", "config__include", "config__exclude", "cron_schedule"} <= set(
        form.context["adminform"].form.fields)
    body = {"collection": collection.pk, "name": "Handbook", "config__path": str(tmp_path / "missing"),
            "config__include": "", "config__exclude": "", "cron_schedule": "every day"}
    response = admin_client.post(f"{ADD}?source=local_files", body)
    assert response.status_code == 200
    errors = form_errors(response)
    assert "does not exist" in errors["config__path"] and "not a valid cron" in errors["cron_schedule"]
    assert not SourceConnection.objects.exists()

    root = write_files({"a.md": "alpha"})
    body.update({"config__path": str(root), "config__include": "*.md\n\n docs/** ", "cron_schedule": "0 */6 * * *"})
    response = admin_client.post(f"{ADD}?source=local_files", body)
    assert response.status_code == 302, form_errors(response)
    connection = SourceConnection.objects.get()
    assert (connection.short_name, connection.name, connection.organization_id) == \
           ("local_files", "Handbook", collection.organization_id)
    assert connection.config == {"path": str(root), "include": ["*.md", "docs/**"], "exclude": []}
    assert connection.sync.cron_schedule == "0 */6 * * *" and connection.sync.next_run_at is not None
    assert Schedule.objects.filter(name=f"sync-{connection.sync.id}", cron="0 */6 * * *").exists()


def test_local_files_change_form_keeps_the_source_and_edits_the_config(admin_client, make_collection, write_files):
    root = write_files({"a.md": "alpha"})
    connection = source_connection_create(collection=make_collection(), short_name="local_files", name="Docs",
                                          config={"path": str(root)}, sync_immediately=False, for_api=False)
    page = admin_client.get(change_url(connection))
    assert page.context["adminform"].form.initial["config__path"] == str(root)
    response = admin_client.post(change_url(connection), {
        "name": "Docs (md only)", "description": "", "config__path": str(root), "config__include": "*.md",
        "config__exclude": "", "cron_schedule": ""})
    assert response.status_code == 302, form_errors(response)
    connection.refresh_from_db()
    assert connection.name == "Docs (md only)" and connection.config["include"] == ["*.md"]
    assert connection.short_name == "local_files"


# --- acl_wiki: a required secret -----------------------------------------------------------------

def test_secrets_are_write_only(admin_client, make_collection, tmp_path):
    collection = make_collection()
    export = tmp_path / "wiki.json"
    export.write_text('{"pages": []}')
    body = {"collection": collection.pk, "name": "Wiki", "config__export_path": str(export), "config__space": "",
            "cron_schedule": ""}
    response = admin_client.post(f"{ADD}?source=acl_wiki", body)
    assert "required" in form_errors(response)["auth__api_token"]

    response = admin_client.post(f"{ADD}?source=acl_wiki", {**body, "auth__api_token": "s3cret-one"})
    assert response.status_code == 302, form_errors(response)
    connection = SourceConnection.objects.get()
    assert decrypt_json(connection.encrypted_credentials) == {"api_token": "s3cret-one"}

    page = admin_client.get(change_url(connection)).content.decode()
    assert "s3cret-one" not in page and connection.encrypted_credentials not in page
    assert "A value is stored; leave empty to keep it." in page

    edit = {"name": "Wiki", "description": "", "config__export_path": str(export), "config__space": "Eng",
            "auth__api_token": "", "cron_schedule": ""}
    assert admin_client.post(change_url(connection), edit).status_code == 302
    connection.refresh_from_db()
    assert decrypt_json(connection.encrypted_credentials) == {"api_token": "s3cret-one"}
    assert connection.config == {"export_path": str(export), "space": "Eng"}

    assert admin_client.post(change_url(connection), {**edit, "auth__api_token": "s3cret-two"}).status_code == 302
    connection.refresh_from_db()
    assert decrypt_json(connection.encrypted_credentials) == {"api_token": "s3cret-two"}


def test_source_connection_admin_hides_credentials_of_sources_without_auth_fields(admin_client, make_collection,
                                                                                  write_files):
    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(write_files({"a.md": "x"}))},
                                          credentials={"token": "s3cret-value"}, sync_immediately=False, for_api=False)
    page = admin_client.get(change_url(connection)).content.decode()
    assert "s3cret-value" not in page
    assert connection.encrypted_credentials not in page


# --- test_tracker: every field type -------------------------------------------------------------

def test_typed_fields_follow_the_declaration(admin_client, make_collection):
    collection = make_collection()
    form = admin_client.get(ADD, {"source": "test_tracker"}).context["adminform"].form
    kinds = {name: type(field).__name__ for name, field in form.fields.items()}
    assert kinds["config__max_issues"] == "IntegerField" and kinds["config__min_score"] == "FloatField"
    assert kinds["config__include_closed"] == "BooleanField" and kinds["config__state"] == "ChoiceField"
    assert form.fields["config__max_issues"].initial == 500
    assert type(form.fields["auth__password"].widget).__name__ == "PasswordInput"

    body = {"collection": collection.pk, "name": "Tracker", "config__base_url": "https://tracker.example.com",
            "config__max_issues": "many", "config__projects": "WEB\nAPI", "config__min_score": "0.5",
            "config__state": "closed", "auth__username": "ops", "auth__password": "pw", "cron_schedule": ""}
    errors = form_errors(admin_client.post(f"{ADD}?source=test_tracker", body))
    assert set(errors) == {"config__max_issues", "config__state"}

    body.update({"config__max_issues": "50", "config__state": "open", "config__include_closed": "on"})
    response = admin_client.post(f"{ADD}?source=test_tracker", body)
    assert response.status_code == 302, form_errors(response)
    connection = SourceConnection.objects.get()
    assert connection.config == {"base_url": "https://tracker.example.com", "max_issues": 50, "include_closed": True,
                                 "projects": ["WEB", "API"], "min_score": 0.5, "state": "open"}
    assert decrypt_json(connection.encrypted_credentials) == {"username": "ops", "password": "pw"}
    page = admin_client.get(change_url(connection))
    assert page.context["adminform"].form.initial["auth__username"] == "ops"
    assert "Connect with OAuth" not in page.content.decode()


# --- acl_directory: the OAuth button ---------------------------------------------------------------

@pytest.fixture
def directory(make_collection, tmp_path):
    path = tmp_path / "directory.json"
    path.write_text('{"entries": []}')
    return source_connection_create(collection=make_collection(), short_name="acl_directory",
                                    config={"entries_path": str(path)}, sync_immediately=False, for_api=False)


def test_oauth_button_says_when_oauth_is_not_configured(admin_client, directory, monkeypatch):
    monkeypatch.setitem(sys.modules, "connectors.authorization", None)  # importing it raises ImportError
    page = admin_client.get(change_url(directory)).content.decode()
    oauth = f"/admin/collections/sourceconnection/{directory.pk}/oauth/"
    assert "Connect with OAuth" in page and oauth in page
    response = admin_client.get(oauth)
    assert response.status_code == 302 and response["Location"] == change_url(directory)
    assert any("OAuth is not configured" in m for m in messages_of(response))


def test_oauth_button_starts_the_flow(admin_client, directory, monkeypatch):
    calls = []

    def start_authorization(connection, redirect_uri):  # the service's contract: connection, redirect URI -> URL
        calls.append((connection.pk, redirect_uri))
        return "https://provider.example.com/authorize?state=abc"

    module = types.ModuleType("connectors.authorization")
    module.start_authorization = start_authorization
    monkeypatch.setitem(sys.modules, "connectors.authorization", module)
    response = admin_client.get(f"/admin/collections/sourceconnection/{directory.pk}/oauth/")
    assert response.status_code == 302 and response["Location"] == "https://provider.example.com/authorize?state=abc"
    assert calls == [(directory.pk, "http://testserver/source-connections/callback")]


# --- actions, job pages, schedules ------------------------------------------------------------------

def action(client, model: str, name: str, pks):
    return client.post(f"/admin/collections/{model}/", {"action": name, "_selected_action": [str(p) for p in pks]},
                       follow=True)


def test_actions_run_force_and_cancel(admin_client, make_collection, write_files):
    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(write_files({"a.md": "alpha"}))},
                                          sync_immediately=False, for_api=False)
    response = action(admin_client, "sourceconnection", "run_sync", [connection.pk])
    assert any("Started a sync of 1" in m for m in messages_of(response))
    job = SyncJob.objects.get()
    assert job.status == "completed" and not job.force_full_sync  # workers run inline in tests

    action(admin_client, "sourceconnection", "force_full_sync", [connection.pk])
    assert SyncJob.objects.filter(force_full_sync=True, status="completed").count() == 1

    pending = sync_job_start(source_connection=connection, enqueue=False)
    response = action(admin_client, "sourceconnection", "run_sync", [connection.pk])
    assert any("Already syncing" in m for m in messages_of(response))
    response = action(admin_client, "syncjob", "cancel_jobs", [pending.pk, job.pk])
    pending.refresh_from_db()
    assert pending.status == "cancelled"
    assert any("already finished" in m for m in messages_of(response))

    running = sync_job_start(source_connection=connection, enqueue=False)
    action(admin_client, "sourceconnection", "cancel_active_jobs", [connection.pk])
    running.refresh_from_db()
    assert running.status == "cancelled"


def test_job_page_shows_counters_duration_and_error(admin_client, make_collection, sync_folder, write_files, tmp_path):
    root = write_files({"a.md": "alpha", "b.pdf": b"not a pdf"})
    connection, job = sync_folder(make_collection(), root)
    page = admin_client.get(change_url(job)).content.decode()
    for label in ("Entities inserted", "Entities skipped", "Duration", "Error category"):
        assert label in page
    assert " s</div>" in page  # the duration, in seconds

    connection.config = {"path": str(tmp_path / "gone")}
    connection.save()
    _, failed = sync_folder(connection.collection, tmp_path, connection=connection)
    page = admin_client.get(change_url(failed)).content.decode()
    assert failed.status == "failed" and "config_error" in page and "does not exist" in page
    listing = admin_client.get("/admin/collections/syncjob/", {"error_category": "config_error"}).content.decode()
    assert str(failed.id)[:8] in listing and str(job.id)[:8] not in listing


def test_sync_schedule_is_validated_and_applied(admin_client, make_collection, write_files):
    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(write_files({"a.md": "alpha"}))},
                                          sync_immediately=False, for_api=False)
    sync = connection.sync
    response = admin_client.post(change_url(sync), {"cron_schedule": "0 0 31 2 *", "cursor_field": ""})
    assert "never fires" in form_errors(response)["cron_schedule"]
    response = admin_client.post(change_url(sync), {"cron_schedule": "15 3 * * 1", "cursor_field": ""})
    assert response.status_code == 302
    sync.refresh_from_db()
    assert sync.cron_schedule == "15 3 * * 1" and sync.next_run_at.weekday() == 0
    assert Schedule.objects.get(name=f"sync-{sync.id}").cron == "15 3 * * 1"
    assert admin_client.post(change_url(sync), {"cron_schedule": "", "cursor_field": ""}).status_code == 302
    assert not Schedule.objects.filter(name=f"sync-{sync.id}").exists()


def test_memberships_are_listed_per_connection(admin_client, make_collection, tmp_path):
    from connectors.sync.services import sync_job_run

    export = tmp_path / "wiki.json"
    export.write_text('{"groups": {"eng": ["user:alice@example.com"]}, "pages": []}')
    connection = source_connection_create(collection=make_collection(), short_name="acl_wiki",
                                          config={"export_path": str(export)}, credentials={"api_token": "t"},
                                          sync_immediately=False, for_api=False)
    sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    membership = AccessGroupMembership.objects.get()
    listing = admin_client.get("/admin/collections/accessgroupmembership/", {"q": "alice"}).content.decode()
    assert "user:alice@example.com" in listing
    assert admin_client.get(change_url(membership)).status_code == 200
    assert Sync.objects.filter(source_connection=connection).exists()


def test_view_only_staff_see_the_stored_config_without_secrets(db, make_collection, tmp_path):
    from django.contrib.auth.models import Permission
    from django.test import Client

    export = tmp_path / "wiki.json"
    export.write_text('{"pages": []}')
    connection = source_connection_create(collection=make_collection(), short_name="acl_wiki",
                                          config={"export_path": str(export)}, credentials={"api_token": "s3cret"},
                                          sync_immediately=False, for_api=False)
    viewer = User.objects.create_user("viewer@example.com", "pw-123456", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_sourceconnection"))
    client = Client()
    client.login(email="viewer@example.com", password="pw-123456")
    page = client.get(change_url(connection))
    assert page.status_code == 200
    html = page.content.decode()
    assert str(export) in html and "s3cret" not in html and 'name="config__export_path"' not in html
    response = client.post("/admin/collections/sourceconnection/", {"action": "run_sync",
                                                                    "_selected_action": [str(connection.pk)]})
    assert not SyncJob.objects.exists()  # actions need the change permission
    assert response.status_code in (200, 302)


def test_oauth_errors_become_messages(admin_client, directory, monkeypatch):
    def start_authorization(connection, redirect_uri):
        raise ValueError("no OAuth client id is configured for acl_directory")

    module = types.ModuleType("connectors.authorization")
    module.start_authorization = start_authorization
    monkeypatch.setitem(sys.modules, "connectors.authorization", module)
    response = admin_client.get(f"/admin/collections/sourceconnection/{directory.pk}/oauth/")
    assert response.status_code == 302 and response["Location"] == change_url(directory)
    assert any("no OAuth client id" in m for m in messages_of(response))


COLLECTION_ADD = "/admin/collections/collection/add/"


@pytest.mark.parametrize("data, field", [
    ({"name": "Handbook", "readable_id": "Bad ID!"}, "readable_id"),
    ({"name": "Hb", "readable_id": "handbook"}, "name"),
    ({"name": "Handbook", "readable_id": "handbook", "embedding_model_name": "nonsense/model"}, "embedding_model_name"),
    ({"name": "Handbook", "readable_id": "docs"}, "readable_id"),  # taken in this organization
])
def test_collection_form_refuses_what_the_service_refuses(admin_client, org, make_collection, data, field):
    make_collection(readable_id="docs")
    form = {"organization": str(org.pk), "embedding_model_name": "local/all-MiniLM-L6-v2", "sync_config": "null",
            "vector_size": "7", **data}
    response = admin_client.post(COLLECTION_ADD, form)
    assert response.status_code == 200 and field in response.context["adminform"].form.errors
    assert list(Collection.objects.values_list("readable_id", flat=True)) == ["docs"]


def test_collection_form_creates_through_the_service_and_pins_the_model(admin_client, org, other_org, make_collection):
    make_collection(readable_id="docs", organization=other_org)  # another organization's id is no conflict
    response = admin_client.post(COLLECTION_ADD, {"organization": str(org.pk), "name": "Staff handbook",
                                                  "readable_id": "docs", "embedding_model_name": "local/all-MiniLM-L6-v2",
                                                  "sync_config": "null", "vector_size": "7"})
    assert response.status_code == 302, response.content
    created = Collection.objects.get(organization=org)
    assert (created.readable_id, created.vector_size, created.embedding_model_name) == (
        "docs", 384, "local/all-MiniLM-L6-v2")
    derived = admin_client.post(COLLECTION_ADD, {"organization": str(org.pk), "name": "Board minutes",
                                                 "embedding_model_name": "local/all-MiniLM-L6-v2", "sync_config": "null"})
    assert derived.status_code == 302
    assert Collection.objects.get(organization=org, name="Board minutes").readable_id.startswith("board-minutes-")

    # afterwards the name changes through collection_update; the readable id and the model stay pinned
    change = change_url(created)
    assert admin_client.post(change, {"name": "Hb", "sync_config": "null"}).status_code == 200
    assert admin_client.post(change, {"name": "Handbook 2", "readable_id": "hacked", "sync_config": "null",
                                      "embedding_model_name": "openai/text-embedding-3-large"}).status_code == 302
    created.refresh_from_db()
    assert (created.name, created.readable_id, created.vector_size) == ("Handbook 2", "docs", 384)
