"""The worked example of docs/connectors.md, run for real: an incremental SaaS source with a
cursor and reported deletions, synced twice through the pipeline against a mocked API."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pytest
import responses

from airweave.collections.models import Entity, SyncCursor
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import cursor_pages
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.connectors.saas_helpers import registered

API = "https://api.acme-notes.example"


@dataclass
class AcmeNoteEntity(BaseEntity):
    body: str = ""

    def textual_representation(self) -> str:
        return self.body


class AcmeNotesSource(BaseSource):
    """Notes of one workspace; incremental through `updated_since`; deletions reported by the API."""

    def http_auth(self):
        from connectors.auth.tokens import BearerAuth

        return BearerAuth(self.credentials["api_key"])

    def generate_entities(self, cursor):
        self._since = cursor.get("updated_since")
        self._newest = self._since
        self._deleted = []
        workspace = self.config["workspace"]

        def fetch(page_cursor):
            params = {"workspace": workspace, "limit": 2}
            if self._since:
                params["updated_since"] = self._since
            if page_cursor:
                params["cursor"] = page_cursor
            body = self.http.get_json("/v1/notes", params=params)
            return body["notes"], body.get("next_cursor")

        for notes in cursor_pages(fetch):
            for note in notes:
                self._newest = max(self._newest or "", note["updated_at"])
                if note.get("deleted"):
                    self._deleted.append(note["id"])
                    continue
                yield AcmeNoteEntity(
                    entity_id=note["id"], name=note["title"], body=note["body"],
                    breadcrumbs=[Breadcrumb(workspace, workspace, "workspace")],
                    updated_at=datetime.fromisoformat(note["updated_at"]),
                    web_url=f"https://acme-notes.example/{workspace}/{note['id']}")

    def is_full_listing(self) -> bool:
        return not self._since

    def deleted_entity_ids(self):
        return self._deleted

    def next_cursor(self) -> dict:
        return {"updated_since": self._newest}


@pytest.fixture
def acme():
    with registered(AcmeNotesSource, name="Acme Notes", short_name="acme_notes", auth_methods=("direct",),
                    auth_fields=(ConfigField("api_key", "API key", is_secret=True, required=True),),
                    config_fields=(ConfigField("workspace", "Workspace", required=True),),
                    rate_limit_level="org", rate_limit="10/second", base_url=API,
                    entity_types=(AcmeNoteEntity,)):
        yield


def note(id, title, body, updated, deleted=False):
    return {"id": id, "title": title, "body": body, "updated_at": updated, "deleted": deleted}


def run(connection):
    job = sync_job_start(source_connection=connection, enqueue=False)
    return sync_job_run(job_id=job.id)


def test_full_then_incremental_sync_with_a_reported_deletion(acme, make_collection):
    connection = source_connection_create(collection=make_collection(), short_name="acme_notes",
                                          config={"workspace": "eng"}, credentials={"api_key": "k-123"},
                                          sync_immediately=False, for_api=False)
    auth = [responses.matchers.header_matcher({"Authorization": "Bearer k-123"})]
    with responses.RequestsMock() as rsps:
        rsps.add("GET", f"{API}/v1/notes?workspace=eng&limit=2", match=auth, json={
            "notes": [note("n1", "Onboarding", "Read the handbook first.", "2025-01-01T10:00:00+00:00"),
                      note("n2", "Release plan", "Ship on Tuesdays.", "2025-01-02T10:00:00+00:00")],
            "next_cursor": "p2"})
        rsps.add("GET", f"{API}/v1/notes?workspace=eng&limit=2&cursor=p2", match=auth, json={
            "notes": [note("n3", "On-call", "Pager rotates weekly.", "2025-01-03T10:00:00+00:00")],
            "next_cursor": None})
        job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3)
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"updated_since": "2025-01-03T10:00:00+00:00"}

    with responses.RequestsMock() as rsps:
        rsps.add("GET", f"{API}/v1/notes?workspace=eng&limit=2&updated_since=2025-01-03T10:00:00%2B00:00", json={
            "notes": [note("n2", "Release plan", "Ship on Wednesdays.", "2025-01-04T10:00:00+00:00"),
                      note("n3", "On-call", "", "2025-01-04T11:00:00+00:00", deleted=True)],
            "next_cursor": None})
        job = run(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    assert sorted(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == ["n1", "n2"]
