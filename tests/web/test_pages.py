"""Every page renders for a logged-in member, in a fixed number of queries."""
from __future__ import annotations

import pytest

from airweave.collections.models import SyncJob


def test_dashboard_shows_cards_health_and_quick_start(team, docs, browser):
    page = browser(team[3]).get("/ui/").content.decode()
    assert "Team handbook" in page and "<code>handbook</code>" in page
    assert "<span data-entity-count>2</span> entities" in page and 'class="badge active"' in page
    assert "Database:" in page and "Worker:" in page and "Provider keys:" in page
    assert "/collections/handbook/search/instant" in page  # the cURL snippet for the first collection
    assert "Create an API key" in page


def test_quick_start_creates_a_key_shown_once(team, docs, browser):
    from airweave.tenancy.services import api_key_authenticate
    import re

    member = browser(team[3])
    response = member.post("/ui/", {"name": "my laptop"})
    text = response.content.decode()
    key = re.search(r"aw_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", text).group(0)
    assert response["Cache-Control"] == "no-store" and text.count(key) >= 2  # the key and the snippet carry it
    api_key, membership = api_key_authenticate(key)
    assert api_key.user == team[3] and api_key.name == "my laptop"
    assert key not in member.get("/ui/").content.decode()


def test_dashboard_banner_for_a_failed_sync(team, docs, browser):
    collection, connection, job, _ = docs
    SyncJob.objects.filter(pk=job.pk).update(status="failed", error="the folder is gone", error_category="not_found")
    page = browser(team[3]).get("/ui/").content.decode()
    assert "failed (not_found): the folder is gone" in page


def test_collections_list_search_and_paging(team, browser, make_collection):
    for i in range(23):
        make_collection(readable_id=f"coll-{i:02d}", name=f"Collection {i:02d}", organization=team[0])
    member = browser(team[3])
    first = member.get("/ui/collections/").content.decode()
    assert "23 collections" in first and "coll-00" in first and "coll-22" not in first and "Page 1 of 2" in first
    second = member.get("/ui/collections/?page=2").content.decode()
    assert "coll-22" in second
    found = member.get("/ui/collections/?q=coll-1").content.decode()
    assert "10 collections" in found and "coll-05" not in found


def test_create_a_collection_with_a_chosen_readable_id(team, browser):
    from airweave.collections.models import Collection

    response = browser(team[3]).post("/ui/collections/", {"name": "Engineering notes", "readable_id": "eng-notes",
                                                          "embedding_model_name": "local/all-MiniLM-L6-v2"})
    assert response["Location"] == "/ui/collections/eng-notes/"
    created = Collection.objects.get(readable_id="eng-notes")
    assert created.embedding_model_name == "local/all-MiniLM-L6-v2" and created.vector_size == 384


def test_create_shows_the_services_errors_at_their_field(team, browser, make_collection):
    make_collection(readable_id="taken", name="Taken one", organization=team[0])
    member = browser(team[3])
    bad_id = member.post("/ui/collections/", {"name": "Engineering", "readable_id": "Not Valid!",
                                              "embedding_model_name": "local/all-MiniLM-L6-v2"})
    assert bad_id.status_code == 400
    assert 'id="id_readable_id_error"' in bad_id.content.decode() or "readable_id must be lowercase" in bad_id.content.decode()
    taken = member.post("/ui/collections/", {"name": "Another", "readable_id": "taken",
                                             "embedding_model_name": "local/all-MiniLM-L6-v2"})
    assert taken.status_code == 400 and "already exists" in taken.content.decode()
    short = member.post("/ui/collections/", {"name": "abc", "embedding_model_name": "local/all-MiniLM-L6-v2"})
    assert short.status_code == 400 and "4 to 64 characters" in short.content.decode()


def test_collection_page_shows_panels_counters_and_entity_types(team, docs, browser):
    collection, connection, job, _ = docs
    page = browser(team[3]).get("/ui/collections/handbook/").content.decode()
    assert f'id="connection-{connection.id}"' in page
    assert 'data-counter="inserted">2<' in page and 'data-counter="skipped">1<' in page
    assert "LocalFileEntity: 2" in page or ": 2</span>" in page
    assert "data-sync-job" not in page  # nothing running: no live stream opened
    assert "Run sync" in page and "Force full sync" in page and "All jobs" in page


def test_run_and_force_full_sync_from_the_panel(team, docs, browser):
    collection, connection, job, _ = docs
    member = browser(team[3])
    url = f"/ui/collections/handbook/connections/{connection.id}/action"
    panel = member.post(url, {"action": "force_full"}, HTTP_HX_REQUEST="true")
    assert panel.status_code == 200 and "Sync of" in panel.content.decode()
    jobs = list(SyncJob.objects.filter(source_connection=connection).order_by("created_at"))
    assert len(jobs) == 2 and jobs[1].force_full_sync and jobs[1].status == "completed"  # tests run tasks inline
    assert jobs[1].entities_kept == 2
    plain = member.post(url, {"action": "run"})
    assert plain.status_code == 302 and plain["Location"].endswith(f"#connection-{connection.id}")


def test_cancel_a_pending_job(team, docs, browser):
    from connectors.sync.jobs import sync_job_create

    collection, connection, job, _ = docs
    pending = sync_job_create(sync=connection.sync)
    member = browser(team[3])
    panel = member.get(f"/ui/collections/handbook/connections/{connection.id}/panel").content.decode()
    assert f'data-sync-job="{pending.id}"' in panel and "Cancel sync" in panel
    member.post(f"/ui/collections/handbook/connections/{connection.id}/action", {"action": "cancel"})
    pending.refresh_from_db()
    assert pending.status == "cancelled"


def test_schedule_validation_and_next_runs(team, docs, browser):
    collection, connection, job, _ = docs
    member = browser(team[3])
    url = f"/ui/collections/handbook/connections/{connection.id}/action"
    bad = member.post(url, {"action": "schedule", "cron": "every monday"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 400 and "is not a valid cron expression" in bad.content.decode()
    good = member.post(url, {"action": "schedule", "cron": "0 6 * * 1"}, HTTP_HX_REQUEST="true")
    text = good.content.decode()
    assert good.status_code == 200 and "Next runs:" in text and text.count("Mon ") >= 3
    connection.sync.refresh_from_db()
    assert connection.sync.cron_schedule == "0 6 * * 1" and connection.sync.next_run_at is not None
    preview = member.get("/ui/cron-preview?cron=*/15+*+*+*+*").content.decode()
    assert preview.count(" · ") == 2
    assert "never fires" in member.get("/ui/cron-preview?cron=0+0+30+2+*").content.decode()


def test_jobs_page_groups_skip_reasons_and_shows_stage_timings(team, docs, browser):
    collection, connection, job, _ = docs
    job.refresh_from_db()
    assert set(job.stage_seconds) == {"listing", "converting", "chunking", "embedding", "writing"}
    assert job.stage_seconds["embedding"] > 0
    page = browser(team[3]).get(f"/ui/collections/handbook/connections/{connection.id}/jobs/").content.decode()
    assert "1 empty" in page and "embedding" in page and "writing" in page


def test_entities_explorer_and_entity_page(team, docs, browser):
    collection, connection, job, _ = docs
    member = browser(team[3])
    listing = member.get("/ui/collections/handbook/entities/").content.decode()
    assert "Requesting leave" in listing and "laptops.md" in listing and "2 entities match" in listing
    below = member.get("/ui/collections/handbook/entities/?breadcrumb=leave").content.decode()
    assert "Requesting leave" in below and "laptops.md" not in below
    entity = collection.entities.get(name="Requesting leave")
    page = member.get(f"/ui/collections/handbook/entities/{entity.pk}/").content.decode()
    assert "leave/requesting-leave.md" in page and "Chunk 0" in page and "HR portal" in page
    assert "Everyone in Team" in page
    assert member.get("/ui/collections/handbook/entities/not-a-uuid/").status_code == 404


def test_playground_without_javascript_runs_the_search(team, docs, browser):
    page = browser(team[3]).get("/ui/collections/handbook/search?query=request+leave&tier=pipeline"
                                "&retrieval_strategy=hybrid&limit=5&generate_answer=true").content.decode()
    assert 'id="result-1"' in page and "Requesting leave" in page and "<mark>leave</mark>" in page
    assert "keyword rank" in page and "vector rank" in page
    assert 'href="#result-1"' in page  # the extractive answer cites result 1
    assert "/collections/handbook/search" in page and "search-handbook" in page  # Show code


def test_playground_shows_a_bad_filter_at_its_condition(team, docs, browser):
    bad = '[{"conditions": [{"field": "nope", "operator": "equals", "value": "x"}]}]'
    response = browser(team[3]).get("/ui/collections/handbook/search", {"query": "leave", "tier": "instant",
                                                                         "filter": bad})
    assert response.status_code == 422 and "unknown field &#x27;nope&#x27;" in response.content.decode()


def test_playground_stream_answers_422_with_the_conditions_location(team, docs, browser):
    response = browser(team[3]).post(
        "/ui/collections/handbook/search/stream", content_type="application/json",
        data={"query": "leave", "tier": "instant",
              "filter": [{"conditions": [{"field": "name", "operator": "equals", "value": "a"},
                                         {"field": "name", "operator": "bogus", "value": "b"}]}]})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "filter", 0, "conditions", 1, "operator"]


def test_playground_stream_sends_the_timeline_answer_and_results(transactional_db, team, docs, browser):
    # transactional: the stream runs the search in a worker thread, on its own database connection
    import json

    response = browser(team[3]).post("/ui/collections/handbook/search/stream", content_type="application/json",
                                     data={"query": "laptop broken", "tier": "pipeline", "generate_answer": True,
                                           "limit": 3})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    from asgiref.sync import async_to_sync

    async def collect():
        return [part async for part in response.streaming_content]

    body = "".join(p if isinstance(p, str) else p.decode() for p in async_to_sync(collect)())
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    types = [e["type"] for e in events]
    assert types[0] == "connected" and "snippets" in events[0]
    assert "operator_start" in types and "operator_end" in types and "completion_delta" in types
    results = next(e for e in events if e["type"] == "results")["results"]
    assert results[0]["name"] == "laptops.md" and results[0]["leg_ranks"]["keyword"] == 1
    assert types[-1] == "done"


def test_source_catalog_and_generated_form(team, docs, browser):
    member = browser(team[3])
    catalog = member.get("/ui/collections/handbook/sources/").content.decode()
    assert "local_files" in catalog and "notion" in catalog
    assert "notion" not in member.get("/ui/collections/handbook/sources/?q=local").content.decode()
    form = member.get("/ui/collections/handbook/sources/notion/").content.decode()
    assert 'name="cred_integration_secret"' in form and 'type="password"' in form
    assert 'name="access_token"' in form and 'name="client_id"' in form and 'value="oauth_browser"' in form
    assert member.get("/ui/collections/handbook/sources/nope/").status_code == 404


def test_add_a_local_folder_starts_the_first_sync(team, docs, browser, write_files, tmp_path, settings):
    from airweave.collections.models import SourceConnection

    root = write_files({"a.md": "# Alpha\n\nThe alpha document."}, root=tmp_path / "second")
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path)]
    response = browser(team[3]).post("/ui/collections/handbook/sources/local_files/",
                                     {"name": "Second folder", "auth_method": "direct", "config_path": str(root),
                                      "config_include": "", "config_exclude": "", "cron": ""})
    assert response.status_code == 302, response.content.decode()[:2000]
    connection = SourceConnection.objects.get(name="Second folder")
    assert response["Location"].endswith(f"#connection-{connection.id}")
    assert connection.jobs.get().entities_inserted == 1


def test_add_source_errors_appear_at_their_field(team, docs, browser, tmp_path, settings):
    settings.AIRWEAVE_LOCAL_ROOTS = [str(tmp_path / "allowed")]
    (tmp_path / "allowed").mkdir()
    member = browser(team[3])
    missing = member.post("/ui/collections/handbook/sources/local_files/", {"auth_method": "direct", "config_path": ""})
    assert missing.status_code == 400 and 'id="id_config_path_error"' in missing.content.decode()
    outside = member.post("/ui/collections/handbook/sources/local_files/",
                          {"auth_method": "direct", "config_path": "/etc"})
    assert outside.status_code == 400 and 'id="id_config_path_error"' in outside.content.decode()
    bad_cron = member.post("/ui/collections/handbook/sources/local_files/",
                           {"auth_method": "direct", "config_path": str(tmp_path / "allowed"), "cron": "nope"})
    assert bad_cron.status_code == 400 and 'id="id_cron_error"' in bad_cron.content.decode()
    no_secret = member.post("/ui/collections/handbook/sources/notion/", {"auth_method": "direct"})
    assert no_secret.status_code == 400 and 'id="id_cred_integration_secret_error"' in no_secret.content.decode()


def test_oauth_in_the_browser_goes_to_the_flows_link_and_the_callback_comes_back(team, docs, browser, client):
    from urllib.parse import parse_qs, urlsplit

    from airweave.collections.models import SourceConnection

    member = browser(team[3])
    response = member.post("/ui/collections/handbook/sources/notion/",
                           {"name": "Wiki", "auth_method": "oauth_byoc", "client_id": "my-client",
                            "client_secret": "my-secret"})
    assert response.status_code == 302 and "/source-connections/authorize/" in response["Location"]
    connection = SourceConnection.objects.get(name="Wiki")
    assert connection.status == "pending_auth" and connection.auth_method == "oauth_byoc"
    provider = member.get(urlsplit(response["Location"]).path)  # the one-time link: on to the provider
    assert provider.status_code == 302 and provider["Location"].startswith("https://api.notion.com/v1/oauth/authorize")
    assert parse_qs(urlsplit(provider["Location"]).query)["client_id"] == ["my-client"]
    panel = member.get("/ui/collections/handbook/").content.decode()
    assert "Waiting for authorization" in panel and f"/connections/{connection.id}/reconnect" in panel


def test_oauth_without_any_client_is_an_error_at_the_form(team, docs, browser, monkeypatch):
    monkeypatch.delenv("AIRWEAVE_OAUTH_NOTION_CLIENT_ID", raising=False)
    response = browser(team[3]).post("/ui/collections/handbook/sources/notion/", {"auth_method": "oauth_browser"})
    assert response.status_code == 400 and "no OAuth client for" in response.content.decode()
    byoc = browser(team[3]).post("/ui/collections/handbook/sources/notion/", {"auth_method": "oauth_byoc"})
    assert byoc.status_code == 400 and 'id="id_client_id_error"' in byoc.content.decode()


def test_reconnect_with_new_credentials(team, docs, browser):
    from connectors.auth.store import ConnectionCredentialStore

    collection, connection, job, _ = docs
    ConnectionCredentialStore(connection.id).mark_needs_reauth("invalid_credentials", "the token was revoked")
    member = browser(team[3])
    assert "the token was revoked" in member.get("/ui/").content.decode()  # the dashboard's banner
    page = member.get(f"/ui/collections/handbook/connections/{connection.id}/reconnect")
    assert page.status_code == 200 and "Reconnect" in page.content.decode()
    done = member.post(f"/ui/collections/handbook/connections/{connection.id}/reconnect", {"method": "direct"})
    assert done.status_code == 302
    connection.refresh_from_db()
    assert connection.status == "active" and connection.is_authenticated and connection.jobs.count() == 2


def test_back_from_a_failed_oauth_flow_the_page_says_why(team, docs, browser):
    page = browser(team[3]).get("/ui/collections/handbook/?status=error&error=oauth_error&message=access_denied")
    assert "Authorization failed: access_denied" in page.content.decode()
