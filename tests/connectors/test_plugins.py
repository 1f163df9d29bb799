"""Sources from installed packages (entry point group `airweave.sources`), without forking.

The example package `tests/plugins/airweave-source-example` and a broken one
(`tests/plugins/airweave-source-broken`, whose module fails to import) are built and installed
with pip into a temporary folder (`pip install --target`, never into the shared venv): a fresh
process started with that folder on its path lists the example's source and records the broken
one as skipped; in this process, with the folder on `sys.path`, discovery brings the example into
GET /sources, the admin's and the web UI's source pickers, and a connection of it syncs through
the ordinary pipeline and is found by search.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from airweave.collections.models import Entity
from airweave.tenancy.models import User
from connectors import registry
from connectors.base import BaseSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
PACKAGES = ("airweave-source-example", "airweave-source-broken")
API = "https://notes.example.org"
KEY = "example-notes-key-0123456789"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """A folder holding both packages as pip installs them (their dist-info carries the entry points)."""
    root = tmp_path_factory.mktemp("plugins")
    sources = []
    for name in PACKAGES:  # built from copies, so no build/ or egg-info lands in the checkout
        shutil.copytree(PLUGINS / name, root / "src" / name)
        sources.append(str(root / "src" / name))
    site = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--no-build-isolation", "--target", str(site), *sources],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return site


def _forget_plugins() -> None:
    for label in [k for k in registry._PLUGIN_SOURCES if "airweave_source_" in k]:
        for short_name in registry._PLUGIN_SOURCES.pop(label):
            registry._SOURCES.pop(short_name, None)
    for label in [k for k in registry._PLUGIN_ERRORS if "airweave_source_" in k]:
        registry._PLUGIN_ERRORS.pop(label)
    for module in [m for m in sys.modules if m.startswith("airweave_source_")]:
        del sys.modules[module]


@pytest.fixture
def installed(plugin_site):
    """The plugin folder on sys.path and discovery run, as at the start of a server; undone afterwards."""
    sys.path.insert(0, str(plugin_site))
    importlib.invalidate_caches()
    try:
        yield registry.discover_plugins()
    finally:
        sys.path.remove(str(plugin_site))
        importlib.invalidate_caches()
        _forget_plugins()


def test_a_fresh_process_lists_the_plugin_and_starts_despite_the_broken_one(plugin_site):
    script = ("import django, json; django.setup(); from connectors.registry import all_sources, plugin_errors; "
              "print(json.dumps({'sources': {c.short_name: c.plugin for c in all_sources()}, "
              "'errors': plugin_errors()}))")
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "DJANGO_SETTINGS_MODULE": "airweave.settings_test"}
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["sources"]["example_notes"] == "airweave-source-example 0.1.0"
    assert seen["sources"]["linear"] == ""  # built in
    assert "broken" not in seen["sources"]
    assert seen["errors"] == {"broken = airweave_source_broken.source":
                              "ModuleNotFoundError: No module named 'airweave_source_broken_missing_dependency'"}
    assert "source plugin 'broken = airweave_source_broken.source' skipped" in done.stderr


def test_the_plugin_is_listed_by_the_api_the_admin_and_the_web_ui(installed, client, make_collection):
    assert [cls.short_name for cls in installed] == ["example_notes"]
    listed = {s["short_name"]: s for s in client.get("/sources").json()}
    assert listed["example_notes"]["config_fields"]["fields"][0]["name"] == "notebook"
    assert listed["example_notes"]["output_entity_definitions"] == ["ExampleNoteEntity"]
    assert client.get("/sources/example_notes").json()["name"] == "Example Notes"

    admin = Client()
    admin.force_login(User.objects.create_superuser("root@example.org", "pw-123456"))
    picker = admin.get("/admin/collections/sourceconnection/add/")
    assert picker.status_code == 200 and b"?source=example_notes" in picker.content
    assert admin.get("/admin/collections/sourceconnection/add/?source=example_notes").status_code == 200


def test_the_web_ui_offers_the_plugin(installed, org, make_collection):
    from airweave.tenancy.models import Membership

    make_collection()
    user = User.objects.create_user("owner@acme.example", "pw-123456")
    Membership.objects.create(user=user, organization=org, role="owner")
    browser = Client()
    browser.force_login(user)
    page = browser.get("/ui/collections/docs/sources/")
    assert page.status_code == 200 and b"Example Notes" in page.content
    assert browser.get("/ui/collections/docs/sources/example_notes/").status_code == 200


def test_the_plugin_syncs_is_searched_and_removes_a_trashed_note(installed, vendor, make_collection, client):
    api = vendor(API)
    notes = [{"id": "n1", "title": "Boat maintenance", "text": "Scrape the hull and repaint the keel every spring.",
              "changed": "2024-04-01T10:00:00Z"},
             {"id": "n2", "title": "Mooring fees", "text": "The harbour charges mooring fees by the metre.",
              "changed": "2024-04-02T10:00:00Z"}]
    page = api.route("GET", "/api/notebooks/harbour/notes", query={"page": "1"},
                     headers={"X-Api-Key": KEY}, reply={"notes": notes[:1], "next_page": 2})
    api.route("GET", "/api/notebooks/harbour/notes", query={"page": "2"}, headers={"X-Api-Key": KEY},
              reply={"notes": notes[1:], "next_page": None})
    connection = connect(make_collection(), "example_notes", {"api_key": KEY}, {"notebook": "harbour"})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert page.calls == 1
    assert search_ids(client, "repaint the keel", limit=1) == ["n1"]

    api.routes.clear()
    api.route("GET", "/api/notebooks/harbour/notes", query={"page": "1", "changed_since": "2024-04-02T10:00:00Z"},
              headers={"X-Api-Key": KEY},
              reply={"notes": [{**notes[0], "trashed": True, "changed": "2024-04-03T10:00:00Z"}], "next_page": None})
    job = run_sync(connection)
    assert (job.status, job.entities_deleted) == ("completed", 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == ["n2"]


class NotASource:
    pass


class TakesLinear(BaseSource):
    name, short_name = "Not Linear", "linear"


class Unnamed(BaseSource):
    pass


@pytest.mark.parametrize("value, error", [
    ("tests.connectors.test_plugins:NotASource", "ValueError: the entry point names"),
    ("tests.connectors.test_plugins:TakesLinear", "ValueError: source short_name 'linear' is already registered"),
    ("tests.connectors.test_plugins:Unnamed", "ValueError: Unnamed is neither declared with @source"),
    ("tests.connectors.test_plugins:missing_attribute", "AttributeError"),
    ("json", "ValueError: module json registers no source"),
])
def test_a_plugin_that_is_no_source_is_skipped_and_the_built_in_stays(value, error):
    linear = registry.get_source("linear")
    ep = importlib.metadata.EntryPoint(name="bad", value=value, group=registry.ENTRY_POINT_GROUP)
    try:
        assert registry.discover_plugins([ep]) == []
        assert registry.plugin_errors()[f"bad = {value}"].startswith(error)
    finally:
        registry._PLUGIN_ERRORS.pop(f"bad = {value}", None)
    assert registry.get_source("linear") is linear


def test_a_connection_of_an_uninstalled_plugin_fails_its_job_with_config_error(installed, make_collection):
    connection = connect(make_collection(), "example_notes", {"api_key": KEY}, {"notebook": "harbour"})
    _forget_plugins()  # the package is gone at the next start
    job = run_sync(connection)
    assert (job.status, job.error_category) == ("failed", "config_error")
    assert "not installed on this server" in job.error
