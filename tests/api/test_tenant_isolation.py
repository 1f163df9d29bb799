"""Two organizations share one server: each calls every REST endpoint on the other's objects and gets 404
(never 403, nothing changed), and every list, count, search and stream shows only its own objects.

Both directions run (Acme → Globex and Globex → Acme), with API keys and with session users.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from airweave.collections.models import Collection, SourceConnection, SyncJob
from airweave.collections.services import collection_create
from airweave.tenancy.models import APIKey, Membership, User
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.api.test_search_pipeline import PROVIDER_KEYS, collect


def _tenant(name: str, word: str, write_files, tmp_path, synced: bool) -> SimpleNamespace:
    """An organization with a user, a key, a collection `docs` (about `word`) and a job: finished when
    `synced`, else pending (nothing indexed)."""
    org = organization_get_or_create(name=name)
    user = User.objects.create_user(f"owner@{name.lower()}.example", "pw-123456")
    Membership.objects.create(user=user, organization=org, role=Membership.Role.OWNER)
    collection = collection_create(organization=org, name=f"{name} documents", readable_id="docs")
    root = write_files({f"{name.lower()}.md": f"# {name} {word}\nThe {word} report of {name}: {word} everywhere."},
                       root=tmp_path / name)
    connection = source_connection_create(collection=collection, short_name="local_files", config={"path": str(root)},
                                          name=f"{name} folder", sync_immediately=False, for_api=False)
    job = sync_job_start(source_connection=connection, enqueue=False)
    if synced:
        job = sync_job_run(job_id=job.id)
    issued = api_key_create(organization=org, name=f"{name} key", created_by=user)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=issued.key)
    session = APIClient()
    session.force_login(user)
    return SimpleNamespace(org=org, user=user, collection=collection, connection=connection, job=job,
                           key=issued.api_key, raw_key=issued.key, client=client, session=session, entity=f"{name.lower()}.md", word=word)


def _tenants(write_files, tmp_path, monkeypatch, synced):
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
    return {"acme": _tenant("Acme", "volcano", write_files, tmp_path, synced),
            "globex": _tenant("Globex", "glacier", write_files, tmp_path, synced)}


@pytest.fixture
def tenants(db, write_files, tmp_path, monkeypatch):
    """Two organizations with their objects; nothing synced (jobs pending)."""
    return _tenants(write_files, tmp_path, monkeypatch, synced=False)


@pytest.fixture
def synced(transactional_db, write_files, tmp_path, monkeypatch):
    """Two organizations whose collections `docs` are synced (one finished job each). Transactional:
    the SSE endpoints read the database from another thread."""
    return _tenants(write_files, tmp_path, monkeypatch, synced=True)


# Every endpoint that names an object of an organization. {c} = connection, {j} = job, {k} = API key.
# (GET /sync/job/{j}/subscribe reads the database from another thread: test_sync_subscription_... covers it.)
# The collection is addressed by a readable_id that only the victim has ("victim-docs").
FOREIGN = [
    ("get", "/collections/victim-docs", None),
    ("patch", "/collections/victim-docs", {"name": "Stolen name"}),
    ("delete", "/collections/victim-docs", None),
    ("post", "/collections/victim-docs/search/instant", {"query": "report"}),
    ("post", "/collections/victim-docs/search/classic", {"query": "report"}),
    ("post", "/collections/victim-docs/search/agentic", {"query": "report"}),
    ("post", "/collections/victim-docs/search/agentic/stream", {"query": "report"}),
    ("post", "/collections/victim-docs/search", {"query": "report"}),
    ("post", "/collections/victim-docs/search/stream", {"query": "report"}),
    ("post", "/source-connections", {"short_name": "local_files", "readable_collection_id": "victim-docs",
                                     "config": {"path": "/tmp"}, "sync_immediately": False}),
    ("get", "/source-connections/{c}", None),
    ("patch", "/source-connections/{c}", {"name": "Stolen"}),
    ("delete", "/source-connections/{c}", None),
    ("post", "/source-connections/{c}/run", None),
    ("get", "/source-connections/{c}/jobs", None),
    ("post", "/source-connections/{c}/jobs/{j}/cancel", None),
    ("get", "/api-keys/{k}", None),
    ("delete", "/api-keys/{k}", None),
    ("delete", "/api-keys?id={k}", None),
    ("post", "/api-keys/{k}/rotate", None),
]
DIRECTIONS = [("globex", "acme"), ("acme", "globex")]


def _call(api, method, url, body):
    if body is None:
        return getattr(api, method)(url)
    return getattr(api, method)(url, json.dumps(body), content_type="application/json")


def _snapshot(victim) -> tuple:
    collection = Collection.objects.get(pk=victim.collection.pk)
    connection = SourceConnection.objects.get(pk=victim.connection.pk)
    key = APIKey.objects.get(pk=victim.key.pk)
    return (collection.name, collection.readable_id, connection.name, connection.status,
            list(SyncJob.objects.filter(source_connection=connection).values_list("id", "status")),
            key.revoked_at, SourceConnection.objects.filter(collection=collection).count())


@pytest.mark.parametrize("caller", ["key", "session"])
@pytest.mark.parametrize("attacker, victim", DIRECTIONS, ids=["globex->acme", "acme->globex"])
@pytest.mark.parametrize("method, url, body", FOREIGN, ids=[f"{m} {u}" for m, u, _ in FOREIGN])
def test_every_endpoint_answers_404_across_organizations(tenants, settings, attacker, victim, caller, method, url,
                                                         body):
    settings.AIRWEAVE_LOCAL_ROOTS = ["/tmp"]
    attacker, victim = tenants[attacker], tenants[victim]
    Collection.objects.filter(pk=victim.collection.pk).update(readable_id="victim-docs")
    before = _snapshot(victim)
    api = attacker.client if caller == "key" else attacker.session
    response = _call(api, method, url.format(c=victim.connection.id, j=victim.job.id, k=victim.key.id), body)
    assert response.status_code == 404, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    assert isinstance(response.json()["detail"], str)
    assert _snapshot(victim) == before
    # The owner still reaches everything.
    assert victim.client.get("/collections/victim-docs").status_code == 200
    assert victim.client.get(f"/api-keys/{victim.key.id}").status_code == 200


@pytest.mark.parametrize("me, them", DIRECTIONS, ids=["globex", "acme"])
def test_lists_and_counts_show_only_my_organization(synced, me, them):
    me, them = synced[me], synced[them]
    for api in (me.client, me.session):
        assert [c["id"] for c in api.get("/collections").json()] == [str(me.collection.id)]
        assert api.get("/collections/count").json() == 1
        assert [c["id"] for c in api.get("/source-connections").json()] == [str(me.connection.id)]
        assert [c["id"] for c in api.get("/source-connections", {"collection": "docs"}).json()] == [str(me.connection.id)]
        assert api.get("/source-connections", {"search": them.org.name}).status_code == 200
        jobs = api.get(f"/source-connections/{me.connection.id}/jobs").json()
        assert [j["id"] for j in jobs] == [str(me.job.id)]
        keys = api.get("/api-keys").json()
        assert {k["organization_id"] for k in keys} == {str(me.org.id)}
        assert str(them.key.id) not in {k["id"] for k in keys}
        detail = api.get("/collections/docs").json()
        assert detail["organization_id"] == str(me.org.id)
        assert detail["source_connection_summaries"] == [{"short_name": "local_files", "name": me.connection.name}]


def _entities(results, key="airweave_system_metadata"):
    return {r[key]["original_entity_id"] for r in results}


@pytest.mark.parametrize("me, them", DIRECTIONS, ids=["globex", "acme"])
def test_searches_and_streams_never_return_the_other_organization(synced, me, them):
    """Both have a collection `docs`; searching for the other's word finds nothing of theirs."""
    me, them = synced[me], synced[them]
    query = {"query": f"{them.word} {me.word} report"}
    for api in (me.client, me.session):
        for tier in ("instant", "classic", "agentic"):
            response = api.post(f"/collections/docs/search/{tier}", query, format="json")
            assert response.status_code == 200, (tier, response.content)
            assert _entities(response.json()["results"]) == {me.entity}, tier
        for strategy in ("hybrid", "semantic", "keyword"):
            response = api.post("/collections/docs/search/instant", {**query, "retrieval_strategy": strategy},
                                format="json")
            assert _entities(response.json()["results"]) <= {me.entity}
        pipeline = api.post("/collections/docs/search", {**query, "generate_answer": True}, format="json").json()
        assert _entities(pipeline["results"], "system_metadata") == {me.entity}
        assert them.word not in (pipeline["completion"] or "").replace(query["query"], "")
        for path in ("/collections/docs/search/stream", "/collections/docs/search/agentic/stream"):
            response = api.post(path, query, format="json")
            assert response.status_code == 200
            body = b"".join(part if isinstance(part, bytes) else part.encode() for part in collect(response.streaming_content))
            assert them.entity.encode() not in body and str(them.collection.id).encode() not in body
            assert me.entity.encode() in body


@pytest.mark.parametrize("me, them", DIRECTIONS, ids=["globex", "acme"])
def test_sync_subscription_streams_only_my_job(synced, me, them):
    me, them = synced[me], synced[them]
    response = me.client.get(f"/sync/job/{me.job.id}/subscribe")
    assert response.status_code == 200
    events = [json.loads(line[6:]) for line in b"".join(collect(response.streaming_content)).decode().splitlines()
              if line.startswith("data: ")]
    assert events[0] == {**events[0], "type": "connected", "job_id": str(me.job.id)}
    assert events[-1]["type"] == "sync_complete" and events[-1]["job_id"] == str(me.job.id)
    for api in (me.client, me.session):
        response = api.get(f"/sync/job/{them.job.id}/subscribe")
        assert response.status_code == 404 and isinstance(response.json()["detail"], str)


def test_session_user_of_both_organizations_picks_one_with_x_organization_id(tenants):
    acme, globex = tenants["acme"], tenants["globex"]
    Membership.objects.create(user=acme.user, organization=globex.org, role=Membership.Role.MEMBER)
    api = acme.session
    assert api.get("/collections/docs").json()["organization_id"] == str(acme.org.id)  # the oldest membership
    as_globex = api.get("/collections/docs", headers={"X-Organization-ID": str(globex.org.id)})
    assert as_globex.json()["organization_id"] == str(globex.org.id)
    assert api.get("/source-connections", headers={"X-Organization-ID": str(globex.org.id)}).json()[0]["id"] == \
        str(globex.connection.id)


@pytest.mark.parametrize("header", ["{other}", "00000000-0000-0000-0000-000000000000", "not-a-uuid"])
def test_x_organization_id_of_an_organization_i_do_not_belong_to_is_404(tenants, header):
    acme, globex = tenants["acme"], tenants["globex"]
    value = header.format(other=globex.org.id)
    for api in (acme.session, acme.client):
        response = api.get("/collections", headers={"X-Organization-ID": value})
        assert response.status_code == 404, response.content
        assert "Organization" in response.json()["detail"]


def test_an_api_key_may_name_its_own_organization(tenants):
    acme = tenants["acme"]
    assert acme.client.get("/collections/count", headers={"X-Organization-ID": str(acme.org.id)}).json() == 1


def test_a_user_without_organization_is_refused(db):
    lonely = User.objects.create_user("lonely@example.com", "pw-123456")
    api = APIClient()
    api.force_login(lonely)
    response = api.get("/collections")
    assert response.status_code == 403
    assert "/accounts/" in response.json()["detail"]


@pytest.mark.parametrize("me, them", DIRECTIONS, ids=["globex", "acme"])
def test_websockets_refuse_the_other_organizations_collection_and_job(synced, me, them):
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from airweave.asgi import application

    me, them = synced[me], synced[them]
    Collection.objects.filter(pk=them.collection.pk).update(readable_id="their-docs")

    async def attempt(path, headers):
        communicator = WebsocketCommunicator(application, path, headers=[*headers, (b"origin", b"http://testserver")])
        connected, code = await communicator.connect(timeout=30)
        if connected:  # refused after the handshake: the close frame carries the code
            output = await communicator.receive_output(timeout=10)
            if output["type"] == "websocket.close":
                connected, code = False, output["code"]
        await communicator.disconnect()
        return connected, code

    key = [(b"x-api-key", me.raw_key.encode())]
    assert async_to_sync(attempt)("/ws/collections/their-docs/search/", key) == (False, 4404)
    assert async_to_sync(attempt)(f"/ws/sync/job/{them.job.id}/", key) == (False, 4404)
    assert async_to_sync(attempt)(f"/ws/sync/job/{me.job.id}/", key)[0] is True
    as_them = [*key, (b"x-organization-id", str(them.org.id).encode())]  # a key cannot pick another organization
    assert async_to_sync(attempt)(f"/ws/sync/job/{them.job.id}/", as_them) == (False, 4401)
