"""The slab source against a fake Slab GraphQL endpoint that checks what Slab checks: the raw
token in `Authorization`, and every query validated against the part of Slab's schema the source
reads (fixtures/slab/schema.graphql) and answered with only the fields it selects. Every post
listed, the changed ones read by id, Quill Delta content as text, archived posts left out, a
throttled HTTP 429 waited out, a refused token marking the connection `needs_reauth`, a sync found
by search, then an incremental run that reads only the edited post and deletes the removed one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import responses
from graphql import build_schema

from airweave.collections.models import Entity, SourceConnection
from connectors.sources.slab import SlabPostEntity, SlabSource, delta_text
from tests.connectors.graphql_fake import GraphQLFake
from tests.connectors.saas_cases import connect, run_sync, search_ids

SCHEMA = build_schema((Path(__file__).parent / "fixtures" / "slab" / "schema.graphql").read_text())
URL = "https://api.slab.com/v1/graphql"
TOKEN = "0qv5njxx9b0172cwywbxk03ovfagmc"


def post(pid, title, updated, ops, *, topic=("t1x9", "Engineering"), archived=None):
    return {"id": pid, "title": title, "updatedAt": updated, "archivedAt": archived, "insertedAt": "2026-03-02T10:00:00Z",
            "publishedAt": "2026-03-02T10:05:00Z", "linkAccess": "INTERNAL",
            "content": json.dumps([{"insert": text} if isinstance(text, str) else {"insert": text} for text in ops]),
            "owner": {"id": "u7", "name": "Priya Natarajan", "email": "priya@harbour.example", "title": "Staff engineer"},
            "topics": [{"id": topic[0], "name": topic[1]}]}


DEPLOY = post("8r2kq1", "Deploy checklist", "2026-11-02T09:00:00Z",
              ["Deploy checklist\n", "Freeze the quokka branch, then run the canary for 30 minutes.\n",
               {"image": "https://slab-cdn.example/canary.png"}, "Roll back on any 5xx spike.\n"])
ONCALL = post("9t4mw2", "On-call handbook", "2026-10-20T12:00:00Z",
              ["Page the owner of the failing service first.\n"], topic=("t2p4", "Operations"))
OLD = post("3z7xa0", "Old wiki import", "2025-01-01T00:00:00Z", ["Imported pages.\n"], archived="2025-06-01T00:00:00Z")


def answers(posts, read):
    return {("SlabPosts", None): {"data": {"organization": {"id": "o1", "name": "Harbour", "host": "harbour.slab.com",
                                                            "posts": posts}}},
            ("SlabPostContents", None): {"data": {"posts": read}}}


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def make(**config):
    return SlabSource(SlabSource.validate_config(config), {"api_token": TOKEN})


def test_every_post_is_listed_and_the_changed_ones_read_as_text(rsps):
    api = GraphQLFake(rsps, URL, SCHEMA, answers([DEPLOY, ONCALL, OLD], [DEPLOY, ONCALL]),
                      headers={"Authorization": TOKEN})
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["post:8r2kq1", "post:9t4mw2"]  # the archived post is left out
    deploy = entities["post:8r2kq1"]
    assert isinstance(deploy, SlabPostEntity) and "canary for 30 minutes" in deploy.text and "slab-cdn" not in deploy.text
    assert deploy.web_url == "https://harbour.slab.com/posts/deploy-checklist-8r2kq1"
    assert [b.name for b in deploy.breadcrumbs] == ["Engineering"]
    assert deploy.raw_source_fields["owner"] == "priya@harbour.example"
    assert api.seen == [("SlabPosts", {}), ("SlabPostContents", {"ids": ["8r2kq1", "9t4mw2"]})]
    assert source.next_cursor() == {"since": {"posts": "2026-11-02T09:00:00Z"}}


def test_a_429_is_waited_out_and_a_refused_token_needs_reauth(rsps, make_collection):
    GraphQLFake(rsps, URL, SCHEMA, {("SlabPosts", None): [
        (429, {"Retry-After": "0"}, {"errors": [{"message": "Too many requests"}]}),
        (200, {}, {"data": {"organization": {"host": "harbour.slab.com", "posts": []}}})]})
    assert list(make().generate_entities({})) == []
    rsps.reset()
    GraphQLFake(rsps, URL, SCHEMA, {("SlabPosts", None): [(401, {}, {"errors": [{"message": "Invalid token"}]})]})
    connection = connect(make_collection(), "slab", {"api_token": "revoked"})
    job = run_sync(connection)
    connection.refresh_from_db()
    assert (job.status, job.error_category, connection.status) == (
        "failed", "invalid_credentials", SourceConnection.Status.NEEDS_REAUTH)


def test_sync_search_then_an_incremental_run_reads_only_the_edited_post(rsps, make_collection, client):
    api = GraphQLFake(rsps, URL, SCHEMA, answers([DEPLOY, ONCALL], [DEPLOY, ONCALL]), headers={"Authorization": TOKEN})
    connection = connect(make_collection(), "slab", {"api_token": TOKEN})
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert search_ids(client, "how long does the canary run before a deploy", limit=1) == ["post:8r2kq1"]

    edited = post("8r2kq1", "Deploy checklist", "2026-11-20T08:00:00Z", ["Run the canary for 45 minutes now.\n"])
    api.answers = answers([edited], [edited])  # the on-call handbook was deleted
    api.seen.clear()
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert api.seen[1] == ("SlabPostContents", {"ids": ["8r2kq1"]})
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == [
        "post:8r2kq1"]


def test_delta_text_reads_strings_lists_and_ops_objects():
    assert delta_text('[{"insert": "a"}, {"insert": {"image": "x"}}, {"insert": "b\\n"}]') == "ab\n"
    assert delta_text({"ops": [{"insert": "c"}]}) == "c" and delta_text("plain text") == "plain text"
