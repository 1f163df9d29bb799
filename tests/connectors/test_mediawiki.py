"""The mediawiki source against a fake wiki that answers only the Action API requests MediaWiki
documents (every query parameter checked, `continue` followed): page ids over two answers,
contents through `generator=allpages`, a subpage's breadcrumbs, a 429 with Retry-After waited
out, a refused OAuth token (`mwoauth-invalid-authorization`) marking the connection
`needs_reauth`, a sync found by search, then an incremental run through recent changes that
re-reads the edited page and removes a deleted one."""
from __future__ import annotations

import pytest

from airweave.collections.models import Entity, SourceConnection, SyncCursor
from connectors.sources.mediawiki import MediaWikiPageEntity, MediaWikiSource
from tests.connectors.saas_cases import connect, run_sync, search_ids

WIKI = "https://wiki.harbour.example"
API = f"{WIKI}/w/api.php"
BASE = {"action": "query", "format": "json", "formatversion": "2"}
PROPS = {"prop": "revisions|info", "rvprop": "ids|timestamp|content", "rvslots": "main", "inprop": "url"}
CONFIG = {"api_url": API}
NOW = "2024-05-04T12:00:00Z"


def page(pageid, title, text, revid, ts):
    return {"pageid": pageid, "ns": 0, "title": title, "contentmodel": "wikitext", "pagelanguage": "en",
            "touched": ts, "lastrevid": revid, "length": len(text),
            "fullurl": f"{WIKI}/wiki/{title.replace(' ', '_')}", "editurl": f"{WIKI}/w/index.php?title=x&action=edit",
            "revisions": [{"revid": revid, "parentid": revid - 1, "timestamp": ts,
                           "slots": {"main": {"contentmodel": "wikitext", "contentformat": "text/x-wiki",
                                              "content": text}}}]}


FERRY = page(21, "Ferry timetable", "The '''ferry''' leaves the north pier at 07:00 and 12:00.", 301,
             "2024-05-01T09:00:00Z")
STORM = page(22, "Ferry timetable/Storms", "When a [[gale warning]] is issued all sailings stop.", 302,
             "2024-05-02T09:00:00Z")


def wiki(fake, pages=(FERRY, STORM), now=NOW):
    ids = [{"pageid": p["pageid"], "ns": 0, "title": p["title"]} for p in pages]
    fake.route("GET", "/w/api.php", query={**BASE, "list": "allpages", "apnamespace": "0", "aplimit": "max"},
               reply={"batchcomplete": True, "continue": {"apcontinue": "Ferry_timetable/Storms", "continue": "-||"},
                      "query": {"allpages": ids[:1]}})
    fake.route("GET", "/w/api.php", query={**BASE, "list": "allpages", "apnamespace": "0", "aplimit": "max",
                                           "apcontinue": "Ferry_timetable/Storms", "continue": "-||"},
               reply={"batchcomplete": True, "query": {"allpages": ids[1:]}})
    fake.route("GET", "/w/api.php", query={**BASE, "meta": "siteinfo", "siprop": "general"},
               reply={"batchcomplete": True, "query": {"general": {"sitename": "Harbour Wiki", "time": now,
                                                                   "generator": "MediaWiki 1.41.1"}}})


def contents(fake, pages=(FERRY, STORM)):
    fake.route("GET", "/w/api.php", query={**BASE, "generator": "allpages", "gapnamespace": "0", "gaplimit": "50",
                                           **PROPS},
               reply={"batchcomplete": True, "query": {"pages": list(pages)}})


def make():
    return MediaWikiSource(MediaWikiSource.validate_config(CONFIG), {})


def test_a_first_run_lists_ids_over_two_answers_and_reads_contents(vendor):
    fake = vendor(WIKI)
    wiki(fake)
    contents(fake)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}
    assert sorted(entities) == ["page:21", "page:22"]
    storms = entities["page:22"]
    assert isinstance(storms, MediaWikiPageEntity) and "gale warning" in storms.text
    assert [b.name for b in storms.breadcrumbs] == ["Ferry timetable"]
    assert storms.web_url == f"{WIKI}/wiki/Ferry_timetable/Storms" and storms.raw_source_fields["revision_id"] == 302
    assert source.is_full_listing() and source.next_cursor() == {"since": {"changes": NOW}}


def test_a_429_with_retry_after_is_waited_out(vendor):
    fake = vendor(WIKI)
    limited = fake.route("GET", "/w/api.php", query={**BASE, "list": "allpages", "apnamespace": "0",
                                                     "aplimit": "max"},
                         reply=[(429, {"Retry-After": "0"}, "Too many requests"),
                                (200, {}, {"batchcomplete": True, "query": {"allpages": []}})])
    wiki(fake)
    contents(fake)
    source = make()
    waits = []
    source.http.sleep = waits.append
    assert len(list(source.generate_entities({}))) == 2 and limited.calls == 2 and len(waits) == 1


def test_a_refused_token_marks_the_connection_needs_reauth(vendor, make_collection):
    fake = vendor(WIKI)
    fake.route("GET", "/w/api.php", query={**BASE, "list": "allpages", "apnamespace": "0", "aplimit": "max"},
               headers={"Authorization": "Bearer revoked-token-0123456789"},
               reply={"error": {"code": "mwoauth-invalid-authorization", "info": "The authorization headers in "
                                "your request are not valid: Invalid access token"}})
    connection = connect(make_collection(), "mediawiki", {"access_token": "revoked-token-0123456789"}, CONFIG)
    job = run_sync(connection)
    connection.refresh_from_db()
    assert (job.status, job.error_category) == ("failed", "invalid_credentials")
    assert connection.status == SourceConnection.Status.NEEDS_REAUTH


def test_sync_search_then_recent_changes_reread_an_edit_and_a_deleted_page_goes(vendor, make_collection, client,
                                                                                monkeypatch):
    monkeypatch.setattr("connectors.sources.mediawiki.MAX_MARK_AGE_DAYS", 100_000)  # the fixtures' dates are old
    fake = vendor(WIKI)
    wiki(fake)
    contents(fake)
    connection = connect(make_collection(), "mediawiki", {}, CONFIG)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 2), job.error
    assert search_ids(client, "when does the ferry leave the north pier", limit=1) == ["page:21"]

    # The storms page was deleted; the timetable was edited.
    fake.routes.clear()
    edited = page(21, "Ferry timetable", "The ferry leaves the north pier at 06:30 and 12:00.", 305,
                  "2024-05-05T08:00:00Z")
    wiki(fake, pages=(edited,), now="2024-05-05T12:00:00Z")
    fake.routes = [r for r in fake.routes if r.query.get("apcontinue") is None]
    fake.routes[0].reply = {"batchcomplete": True, "query": {"allpages": [{"pageid": 21, "ns": 0,
                                                                           "title": "Ferry timetable"}]}}
    fake.route("GET", "/w/api.php", query={**BASE, "list": "recentchanges", "rcstart": NOW, "rcdir": "newer",
                                           "rcnamespace": "0", "rctype": "edit|new|log",
                                           "rcprop": "title|ids|timestamp", "rclimit": "500"},
               reply={"batchcomplete": True, "query": {"recentchanges": [
                   {"type": "log", "ns": 0, "title": "Ferry timetable/Storms", "pageid": 0, "revid": 0,
                    "old_revid": 0, "rcid": 900, "timestamp": "2024-05-05T07:00:00Z"},
                   {"type": "edit", "ns": 0, "title": "Ferry timetable", "pageid": 21, "revid": 305,
                    "old_revid": 301, "rcid": 901, "timestamp": "2024-05-05T08:00:00Z"}]}})
    fake.route("GET", "/w/api.php", query={**BASE, "pageids": "21", **PROPS},
               reply={"batchcomplete": True, "query": {"pages": [edited]}})
    job = run_sync(connection)
    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1), job.error
    assert list(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True)) == \
        ["page:21"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data == {"since": {"changes": "2024-05-05T12:00:00Z"}}
    assert search_ids(client, "first ferry at half past six", limit=1) == ["page:21"]


@pytest.mark.parametrize("url", ["https://wiki.harbour.example/wiki/Main_Page", "http://192.168.1.4/w/api.php"])
def test_an_api_url_that_is_not_a_public_api_php_is_refused_over_the_api(url, client, make_collection):
    make_collection()
    r = client.post("/source-connections", {"short_name": "mediawiki", "readable_collection_id": "docs",
                                            "config": {"api_url": url}}, format="json")
    assert r.status_code == 422, r.content
