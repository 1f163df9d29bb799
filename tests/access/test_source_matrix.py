"""The access matrix over the real sources that mirror their vendor's permissions.

Each source's test module builds an access world (`acl_world(rsps)` in tests/connectors/test_<source>.py):
it installs that source's vendor fake (documented request and response shapes) with a small corpus
whose items are open, private to a group (nested where the vendor nests), or private to users, and
says which entity ids alice, bob and carol may see at the vendor. Here each world is synced through
the real pipeline (memberships first, then entities) and every tier is asked as each user, with the
session of a signed-in user: instant (hybrid, semantic, keyword), the pipeline endpoint with its
cited answer and its SSE stream, classic, agentic and its stream, and the entity counts of
/source-connections. A user sees exactly the ids of the world, no hidden id appears anywhere in any
result or event and no hidden entity's name in an answer; the organization-wide API key sees every id.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable

import pytest
import responses
from rest_framework.test import APIClient

from airweave.collections.models import Entity
from airweave.collections.services import collection_create
from airweave.tenancy.models import Membership, User
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.registry import get_source
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start
from tests.access.test_matrix import sse_events
from tests.providers.vendor_server import hermetic_providers  # noqa: F401

USERS = ("alice", "bob", "carol")
QUERY = "status of the work"


@dataclass
class AclWorld:
    """One source's corpus at its vendor fake and who may see what there.

    `visible` maps a user name (alice, bob, carol: `<name>@example.com`) to the entity ids that
    user may see at the vendor; `everything` is every entity id the sync indexes.
    """

    short_name: str
    credentials: dict
    config: dict
    visible: dict[str, set[str]]
    everything: set[str]
    # Runs after the sync, before the searches (e.g. to stop a fake that the searches must not call).
    after_sync: Callable[[], None] | None = None
    extra: dict = field(default_factory=dict)


def _worlds() -> dict[str, Callable]:
    from tests.connectors import (test_box, test_confluence, test_dropbox, test_github, test_gitlab, test_gmail,
                                  test_google_drive, test_intercom, test_jira, test_linear, test_msgraph,
                                  test_salesforce, test_slack, test_teams, test_zendesk)

    modules = {"box": test_box, "confluence": test_confluence, "dropbox": test_dropbox, "github": test_github,
               "gitlab": test_gitlab, "gmail": test_gmail, "google_drive": test_google_drive, "jira": test_jira,
               "intercom": test_intercom, "linear": test_linear, "salesforce": test_salesforce, "slack": test_slack,
               "teams": test_teams, "zendesk": test_zendesk}
    return {**{name: module.acl_world for name, module in modules.items()},
            "onedrive": test_msgraph.onedrive_world, "sharepoint": test_msgraph.sharepoint_world}


WORLDS = _worlds()


def found_ids(payload) -> set[str]:
    """Every entity id named in `payload` outside breadcrumbs: `original_entity_id`s, and `entity_id`s less their
    `__chunk_<n>`."""
    out: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("original_entity_id", "entity_id") and isinstance(item, str):
                    out.add(re.sub(r"__chunk_\d+$", "", item))
                elif key != "breadcrumbs":  # ancestors (a repository, a folder) are not results
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(payload)
    return out


@pytest.fixture(autouse=True)
def _hermetic(hermetic_providers):
    yield


@pytest.fixture(params=sorted(WORLDS))
def synced(request, transactional_db):
    """(world, organization API key, users): the world of one source synced into collection `acl-src`."""
    org = organization_get_or_create(name="Source matrix org")
    collection = collection_create(organization=org, name="Source ACL", readable_id="acl-src")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        world: AclWorld = WORLDS[request.param](rsps)
        assert get_source(world.short_name).supports_access_control
        connection = source_connection_create(collection=collection, short_name=world.short_name, name=world.short_name,
                                              config=world.config, credentials=world.credentials,
                                              sync_immediately=False, for_api=False)
        job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
        assert job.status == "completed", (job.error, job.error_details)
        assert job.entities_inserted == len(world.everything), job.error_details
    world.extra["names"] = dict(Entity.objects.filter(source_connection=connection).values_list("entity_id", "name"))
    users = {}
    for name in USERS:
        users[name] = User.objects.create_user(f"{name}@example.com", "pw-123456")
        Membership.objects.create(user=users[name], organization=org)
    return world, api_key_create(organization=org).key, users


def _check(client: APIClient, expected: set[str], everything: set[str], names: dict[str, str]) -> None:
    hidden = everything - expected
    # Names of hidden entities that no visible entity shares: none may appear in an answer.
    hidden_names = {names[i] for i in hidden} - {names[i] for i in expected}
    base = "/collections/acl-src/search"
    body = {"query": QUERY, "limit": 100}

    def shows(payload, exact=True, where=""):
        ids = found_ids(payload)
        assert not ids & hidden, (where, sorted(ids & hidden))
        if exact:
            assert ids == expected, (where, sorted(ids ^ expected))
        else:
            assert ids <= expected, where

    for strategy in ("hybrid", "semantic"):
        response = client.post(f"{base}/instant", {**body, "retrieval_strategy": strategy}, format="json")
        assert response.status_code == 200, response.content
        shows(response.json(), where=strategy)
    response = client.post(f"{base}/instant", {**body, "retrieval_strategy": "keyword"}, format="json")
    assert response.status_code == 200, response.content
    shows(response.json(), exact=False, where="keyword")

    response = client.post(base, body, format="json")
    assert response.status_code == 200, response.content
    shows(response.json()["results"], where="pipeline")
    answer = response.json()["completion"] or ""
    assert not [n for n in hidden_names if n in answer], "the answer names a hidden entity"
    cited = [int(n) for n in re.findall(r"\[\[(\d+)\]\]", answer)]
    assert all(1 <= n <= len(response.json()["results"]) for n in cited)
    events = sse_events(client.post(f"{base}/stream", body, format="json"))
    shows(events, where="stream")

    for tier in ("classic", "agentic"):
        response = client.post(f"{base}/{tier}", body, format="json")
        assert response.status_code == 200, response.content
        shows(response.json(), exact=False, where=tier)
    shows(sse_events(client.post(f"{base}/agentic/stream", body, format="json")), exact=False, where="agentic stream")

    listed = client.get("/source-connections", {"collection": "acl-src"}).json()
    assert sum(c["entity_count"] for c in listed) == len(expected)


@pytest.mark.parametrize("caller", ["org-key", *USERS])
def test_each_user_sees_exactly_what_the_vendor_shows_them(synced, caller):
    world, key, users = synced
    client = APIClient()
    if caller == "org-key":
        client.credentials(HTTP_X_API_KEY=key)
        expected = world.everything
    else:
        client.force_login(users[caller])
        expected = world.visible[caller]
    assert expected <= world.everything
    _check(client, expected, world.everything, world.extra["names"])


def test_the_worlds_tell_users_apart():
    """In each world users see different things, and at least one of them misses something."""
    for name, build in WORLDS.items():
        with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            world = build(rsps)
            seen = [world.visible[u] for u in USERS]
            assert any(s != world.everything for s in seen), name
            assert len({frozenset(s) for s in seen}) > 1, name
