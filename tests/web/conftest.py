"""Fixtures of the web UI's page tests: a team (owner, admin, member) of one organization, a
stranger of another, logged-in browsers (Django's test client) and a synced folder."""
from __future__ import annotations

import pytest
from django.test import Client

from airweave.tenancy.models import Membership, User
from airweave.tenancy.services import organization_create


@pytest.fixture
def team(db):
    owner = User.objects.create_user("owner@team.example", "pw-123456")
    organization = organization_create(name="Team", owner=owner)
    admin = User.objects.create_user("admin@team.example", "pw-123456")
    member = User.objects.create_user("member@team.example", "pw-123456")
    Membership.objects.create(user=admin, organization=organization, role="admin")
    Membership.objects.create(user=member, organization=organization, role="member")
    return organization, owner, admin, member


@pytest.fixture
def stranger(db):
    user = User.objects.create_user("eve@elsewhere.example", "pw-123456")
    organization_create(name="Elsewhere", owner=user)
    return user


@pytest.fixture
def browser():
    def login(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return login


@pytest.fixture
def docs(team, make_collection, write_files, sync_folder):
    """The team's collection `handbook` with a local_files connection synced once over three files."""
    organization = team[0]
    collection = make_collection(readable_id="handbook", name="Team handbook", organization=organization)
    root = write_files({
        "leave/requesting-leave.md": "---\ntitle: Requesting leave\n---\nTo request leave, ask your manager and "
                                     "file the leave form in the HR portal two weeks ahead.",
        "tools/laptops.md": "# Laptops\n\nEvery engineer gets a laptop on the first day. Report broken laptops to IT.",
        "empty.txt": "",
    })
    connection, job = sync_folder(collection, root)
    return collection, connection, job, root
