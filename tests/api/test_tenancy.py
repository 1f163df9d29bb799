"""Tenancy over REST: another organization's objects answer 404 (never 403) on every endpoint,
nothing of theirs is changed, and lists, counts and search results never show them."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from airweave.collections.models import Collection, Entity, SourceConnection, SyncJob
from connectors.services import source_connection_create
from connectors.sync.jobs import sync_job_create


@pytest.fixture
def mine(make_collection, write_files, tmp_path):
    """Acme's collection 'acme-docs' with a connection (not synced) and a pending job."""
    collection = make_collection(readable_id="acme-docs", name="Acme documents")
    root = write_files({"a.md": "# A\nAcme secret plans."}, root=tmp_path / "acme")
    connection = source_connection_create(collection=collection, short_name="local_files", config={"path": str(root)},
                                          name="Acme folder", sync_immediately=False, for_api=False)
    job = sync_job_create(sync=connection.sync)
    return SimpleNamespace(collection=collection, connection=connection, job=job)


ENDPOINTS = [
    ("get", "/collections/acme-docs", None),
    ("patch", "/collections/acme-docs", {"name": "Stolen name"}),
    ("delete", "/collections/acme-docs", None),
    ("post", "/collections/acme-docs/search/instant", {"query": "secret plans"}),
    ("get", "/source-connections/{connection}", None),
    ("patch", "/source-connections/{connection}", {"name": "Stolen"}),
    ("delete", "/source-connections/{connection}", None),
    ("post", "/source-connections/{connection}/run", None),
    ("get", "/source-connections/{connection}/jobs", None),
    ("post", "/source-connections/{connection}/jobs/{job}/cancel", None),
]


@pytest.mark.parametrize("method, url, body", ENDPOINTS, ids=[f"{m} {u}" for m, u, _ in ENDPOINTS])
def test_other_organization_gets_404_and_changes_nothing(other_client, client, mine, method, url, body):
    url = url.format(connection=mine.connection.id, job=mine.job.id)
    kwargs = {"format": "json"} if body is not None else {}
    r = getattr(other_client, method)(url, body, **kwargs) if body is not None else getattr(other_client, method)(url)
    assert r.status_code == 404, (r.status_code, r.content)
    assert isinstance(r.json()["detail"], str)
    # Nothing changed for the owner.
    collection = Collection.objects.get(pk=mine.collection.pk)
    assert collection.name == "Acme documents"
    connection = SourceConnection.objects.get(pk=mine.connection.pk)
    assert connection.name == "Acme folder"
    assert SyncJob.objects.get(pk=mine.job.pk).status == "pending"
    assert SyncJob.objects.filter(source_connection=connection).count() == 1
    # ... and the owner still reaches it.
    assert client.get(f"/source-connections/{mine.connection.id}").status_code == 200


def test_other_organization_cannot_attach_a_connection_to_my_collection(other_client, mine, settings, tmp_path):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    r = other_client.post("/source-connections", {"short_name": "local_files", "readable_collection_id": "acme-docs",
                                                  "config": {"path": str(tmp_path)}, "sync_immediately": False},
                          format="json")
    assert r.status_code == 404
    assert SourceConnection.objects.filter(collection=mine.collection).count() == 1


def test_job_of_my_connection_through_other_orgs_connection_is_404(other_client, other_org, mine, write_files, tmp_path):
    # The other org owns a connection; addressing my job through it must not reach my job.
    from airweave.collections.services import collection_create

    theirs = collection_create(organization=other_org, name="Globex documents", readable_id="globex-docs")
    root = write_files({"b.md": "# B\nGlobex."}, root=tmp_path / "globex")
    their_conn = source_connection_create(collection=theirs, short_name="local_files", config={"path": str(root)},
                                          sync_immediately=False, for_api=False)
    r = other_client.post(f"/source-connections/{their_conn.id}/jobs/{mine.job.id}/cancel")
    assert r.status_code == 404
    assert SyncJob.objects.get(pk=mine.job.pk).status == "pending"


def test_lists_and_counts_never_show_the_other_organization(client, other_client, mine, other_org, tmp_path,
                                                             write_files):
    from airweave.collections.services import collection_create

    theirs = collection_create(organization=other_org, name="Globex documents", readable_id="globex-docs")
    root = write_files({"b.md": "# B\nGlobex."}, root=tmp_path / "globex")
    their_conn = source_connection_create(collection=theirs, short_name="local_files", config={"path": str(root)},
                                          sync_immediately=False, for_api=False)

    assert [c["readable_id"] for c in client.get("/collections").json()] == ["acme-docs"]
    assert [c["readable_id"] for c in other_client.get("/collections").json()] == ["globex-docs"]
    assert client.get("/collections/count").json() == 1
    assert other_client.get("/collections/count").json() == 1
    assert other_client.get("/collections", {"search": "acme"}).json() == []

    assert [c["id"] for c in client.get("/source-connections").json()] == [str(mine.connection.id)]
    assert [c["id"] for c in other_client.get("/source-connections").json()] == [str(their_conn.id)]
    assert other_client.get("/source-connections", {"collection": "acme-docs"}).json() == []

    summaries = other_client.get("/collections/globex-docs").json()["source_connection_summaries"]
    assert summaries == [{"short_name": "local_files", "name": their_conn.name}]


def test_same_readable_id_in_two_organizations(client, other_client):
    a = client.post("/collections", {"name": "Shared name", "readable_id": "shared"}, format="json")
    b = other_client.post("/collections", {"name": "Shared name", "readable_id": "shared"}, format="json")
    assert a.status_code == 201 and b.status_code == 201
    assert a.json()["id"] != b.json()["id"]
    assert client.get("/collections/shared").json()["id"] == a.json()["id"]
    assert other_client.get("/collections/shared").json()["id"] == b.json()["id"]
    assert other_client.delete("/collections/shared").status_code == 200
    assert client.get("/collections/shared").status_code == 200


def test_search_never_returns_the_other_organizations_chunks(client, other_client, make_collection, other_org,
                                                             sync_folder, write_files, tmp_path):
    from airweave.collections.services import collection_create

    ours = make_collection(readable_id="docs")
    theirs = collection_create(organization=other_org, name="Their documents", readable_id="docs")
    sync_folder(ours, write_files({"ours.md": "Our volcano eruption report."}, root=tmp_path / "ours"))
    sync_folder(theirs, write_files({"theirs.md": "Their volcano eruption report."}, root=tmp_path / "theirs"))
    assert Entity.objects.count() == 2
    for api, expected in ((client, "ours.md"), (other_client, "theirs.md")):
        for strategy in ("hybrid", "semantic", "keyword"):
            r = api.post("/collections/docs/search/instant", {"query": "volcano eruption", "retrieval_strategy": strategy},
                         format="json")
            assert r.status_code == 200
            assert [x["airweave_system_metadata"]["original_entity_id"] for x in r.json()["results"]] == [expected]
