"""Who sees what: principals of callers, group memberships kept by sync, access stored on entities."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from airweave.collections.access import (
    group_principal, is_visible, normalize_access, principals_for, principals_for_user,
)
from airweave.collections.models import AccessGroupMembership, Chunk, Entity
from airweave.tenancy.context import APIKeyActor
from airweave.tenancy.models import Membership, User
from airweave.tenancy.services import api_key_create

pytestmark = pytest.mark.django_db

GROUPS = {
    "eng": ["user:Alice@Example.com", "user:dan@example.com"],
    "platform": ["group:eng"],
    "staff": ["group:platform", "user:erin@example.com"],
    "company": ["group:staff"],
}
PAGES = [
    {"id": "p-public", "title": "Public page", "body": "roadmap for everyone", "is_public": True},
    {"id": "p-alice", "title": "Alice page", "body": "roadmap for alice", "viewers": ["user:ALICE@example.com"]},
    {"id": "p-eng", "title": "Eng page", "body": "roadmap for eng", "viewers": ["group:eng"]},
    {"id": "p-none", "title": "Unlisted page", "body": "roadmap without an access list"},
]


@pytest.fixture
def alice(org):
    user = User.objects.create_user("alice@example.com", "pw-123456")
    Membership.objects.create(user=user, organization=org)
    return user


# --- the rule -------------------------------------------------------------------------------------

def test_sources_without_access_control_are_org_visible_whatever_they_say():
    assert normalize_access(supports_access_control=False, source_connection_id="c1",
                            viewers=["user:a@example.com"], is_public=False) == ([], True)


def test_supporting_sources_are_closed_without_an_access_list():
    assert normalize_access(supports_access_control=True, source_connection_id="c1", viewers=[],
                            is_public=None) == ([], False)
    assert normalize_access(supports_access_control=True, source_connection_id="c1", viewers=None,
                            is_public=True) == ([], True)


def test_viewers_are_normalised_namespaced_and_deduplicated():
    viewers, public = normalize_access(
        supports_access_control=True, source_connection_id="c1", is_public=None,
        viewers=["user: Bob@Example.COM", "user:bob@example.com", "group:eng", "role:admin", "user:", "group:", 7,
                 "group:" + "x" * 300])
    assert public is False
    assert viewers == sorted(["user:bob@example.com", "group:c1:eng", group_principal("c1", "x" * 300)])
    assert group_principal("c1", "x" * 300).startswith("group:c1:sha256-")
    assert len(group_principal("0" * 36, "y" * 200)) <= 320


def test_is_visible_mirrors_the_sql_rule():
    assert is_visible(None, [], False)
    assert is_visible([], [], True)
    assert not is_visible([], ["user:a@example.com"], False)
    assert is_visible(["user:a@example.com"], ["user:a@example.com"], False)


# --- sync keeps memberships ---------------------------------------------------------------------

def _memberships(connection):
    return set(AccessGroupMembership.objects.filter(source_connection=connection).values_list("group_id", "member"))


def test_sync_stores_memberships_and_replaces_them_next_time(make_collection, sync_wiki):
    collection = make_collection()
    connection, job = sync_wiki(collection, {"groups": GROUPS, "pages": PAGES})
    assert job.status == "completed", job.error
    assert ("eng", "user:alice@example.com") in _memberships(connection)  # e-mail lower-cased
    assert ("platform", "group:eng") in _memberships(connection)
    assert job.error_details["access_memberships"] == {"total": 6, "added": 6, "removed": 0, "skipped": {}}

    changed = {"eng": ["user:alice@example.com"], "ops": ["user:dan@example.com", "role:x", "user:"]}
    _, job = sync_wiki(collection, {"groups": changed, "pages": PAGES}, connection=connection)
    assert _memberships(connection) == {("eng", "user:alice@example.com"), ("ops", "user:dan@example.com")}
    counts = job.error_details["access_memberships"]
    assert (counts["total"], counts["added"], counts["removed"]) == (2, 1, 5)
    assert counts["skipped"] == {"member is neither user:<email> nor group:<group id>": 2}

    _, job = sync_wiki(collection, {"pages": PAGES}, connection=connection)  # no groups listed: left alone
    assert len(_memberships(connection)) == 2 and "access_memberships" not in (job.error_details or {})


def test_entities_store_namespaced_access_and_unlisted_pages_are_closed(make_collection, sync_wiki, sync_folder,
                                                                        write_files):
    collection = make_collection()
    connection, _ = sync_wiki(collection, {"groups": GROUPS, "pages": PAGES})
    access = {e.entity_id: (e.access_viewers, e.access_is_public) for e in Entity.objects.filter(
        source_connection=connection)}
    assert access == {
        "p-public": ([], True),
        "p-alice": (["user:alice@example.com"], False),
        "p-eng": ([f"group:{connection.id}:eng"], False),
        "p-none": ([], False),
    }
    chunk = Chunk.objects.get(original_entity_id="p-eng")
    assert (chunk.access_viewers, chunk.access_is_public) == ([f"group:{connection.id}:eng"], False)
    local, _ = sync_folder(collection, write_files({"a.md": "roadmap"}))
    assert list(Entity.objects.filter(source_connection=local).values_list("access_viewers", "access_is_public")) \
        == [([], True)]


def test_an_unchanged_resync_keeps_every_page(make_collection, sync_wiki):
    collection = make_collection()
    connection, _ = sync_wiki(collection, {"groups": GROUPS, "pages": PAGES})
    _, job = sync_wiki(collection, {"groups": GROUPS, "pages": PAGES}, connection=connection)
    assert (job.entities_kept, job.entities_updated, job.entities_inserted) == (4, 0, 0)


# --- principals of a user ------------------------------------------------------------------------

def test_user_principals_follow_nested_groups_up_to_the_depth_cap(make_collection, sync_wiki, alice, settings):
    connection, _ = sync_wiki(make_collection(), {"groups": GROUPS, "pages": PAGES})
    g = lambda name: group_principal(connection.id, name)  # noqa: E731
    settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH = 10
    assert principals_for_user(user=alice, organization=alice.memberships.get().organization) == \
        ["user:alice@example.com", *sorted([g("eng"), g("platform"), g("staff"), g("company")])]
    settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH = 1
    assert set(principals_for_user(user=alice, organization=connection.organization)) == \
        {"user:alice@example.com", g("eng"), g("platform")}
    settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH = 0
    assert set(principals_for_user(user=alice, organization=connection.organization)) == \
        {"user:alice@example.com", g("eng")}


def test_group_cycles_end(make_collection, sync_wiki, alice):
    cyclic = {"a": ["group:b", "user:alice@example.com"], "b": ["group:a"], "c": ["group:c"]}
    connection, _ = sync_wiki(make_collection(), {"groups": cyclic, "pages": PAGES})
    assert set(principals_for_user(user=alice, organization=connection.organization)) == {
        "user:alice@example.com", group_principal(connection.id, "a"), group_principal(connection.id, "b")}


def test_same_group_name_in_two_connections_does_not_collide(make_collection, sync_wiki, alice):
    collection = make_collection()
    first, _ = sync_wiki(collection, {"groups": {"eng": ["user:alice@example.com"]}, "pages": []}, name="one")
    second, _ = sync_wiki(collection, {"groups": {"eng": ["user:bob@example.com"]}, "pages": []}, name="two")
    principals = principals_for_user(user=alice, organization=collection.organization)
    assert group_principal(first.id, "eng") in principals and group_principal(second.id, "eng") not in principals


def test_another_organizations_memberships_do_not_count(make_collection, sync_wiki, alice, other_org):
    elsewhere = make_collection(readable_id="elsewhere", organization=other_org)
    sync_wiki(elsewhere, {"groups": {"eng": ["user:alice@example.com"]}, "pages": []})
    assert principals_for_user(user=alice, organization=alice.memberships.get().organization) == \
        ["user:alice@example.com"]


# --- principals of a caller ----------------------------------------------------------------------

def test_callers(org, alice):
    key = api_key_create(organization=org).api_key
    assert principals_for(actor=APIKeyActor(key), organization=org) is None  # organization-wide key
    assert principals_for(actor=alice, organization=org) == ["user:alice@example.com"]  # session or OAuth user
    assert principals_for(actor=AnonymousUser(), organization=org) == []  # public entities only

    key.user = alice  # a key bound to a user (the nullable APIKey.user foreign key)
    assert principals_for(actor=APIKeyActor(key), organization=org) == ["user:alice@example.com"]

    class OAuthCaller:  # a caller object that carries the user it acts for
        user = alice

    assert principals_for(actor=OAuthCaller(), organization=org) == ["user:alice@example.com"]


def test_the_search_command_searches_as_a_user(make_collection, sync_wiki, alice):
    from io import StringIO

    from django.core.management import call_command

    collection = make_collection(readable_id="wiki")
    sync_wiki(collection, {"groups": GROUPS, "pages": PAGES})

    def titles(**options):
        out = StringIO()
        call_command("search", "wiki", "roadmap", "--org", collection.organization.name, stdout=out, **options)
        return {title for title in ("Public page", "Alice page", "Eng page", "Unlisted page") if title in out.getvalue()}

    assert titles() == {"Public page", "Alice page", "Eng page", "Unlisted page"}  # the operator sees everything
    assert titles(as_user="Alice@example.com") == {"Public page", "Alice page", "Eng page"}


def test_a_caller_known_by_its_email_is_that_user(org, alice):
    class TokenCaller:  # e.g. an OAuth access token's caller: authenticated, with the user's e-mail
        is_authenticated = True
        is_anonymous = False
        email = "Alice@Example.com"

    assert principals_for(actor=TokenCaller(), organization=org) == ["user:alice@example.com"]
