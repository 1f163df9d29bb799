"""The website source against a real local HTTP server: crawl rules, robots.txt, sitemaps, caps,
the SSRF guard, and the lifecycle create → sync → searchable → edit → sync → delete → sync.

Loopback is refused by the SSRF guard by default, so these tests allow private hosts
explicitly (`AIRWEAVE_ALLOW_PRIVATE_HOSTS`), except the ones about the refusal.
"""
from __future__ import annotations

import http.server
import threading

import pytest

from airweave.collections.models import Entity, SourceConnection
from connectors.sources.website import WebsiteSource, normalize_url


class Site:
    """A local site: `pages[path] = (status, content_type, body)`; `hits` lists requested paths."""

    def __init__(self):
        self.pages: dict[str, tuple[int, str, str]] = {}
        self.hits: list[str] = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                site.hits.append(self.path)
                status, content_type, body = site.pages.get(self.path, (404, "text/html", "<h1>Not found</h1>"))
                data = body.encode()
                self.send_response(status)
                if status in (301, 302):
                    self.send_header("Location", body)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def html(self, path, title, body, links=(), head=""):
        anchors = "".join(f'<a href="{href}">{text}</a> ' for href, text in links)
        self.pages[path] = (200, "text/html; charset=utf-8",
                            f"<html lang='en'><head><title>{title}</title>{head}</head><body><nav>Menu</nav>"
                            f"<main><h1>{title}</h1><p>{body}</p><p>{anchors}</p></main></body></html>")


@pytest.fixture
def site():
    s = Site()
    yield s
    s.server.shutdown()
    s.server.server_close()


@pytest.fixture
def private_hosts(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True


def build_handbook(site):
    site.pages["/robots.txt"] = (200, "text/plain", "User-agent: *\nDisallow: /private/\n")
    site.html("/", "Acme handbook", "Welcome to the Acme handbook.",
              [("/guide", "Guide"), ("/faq#refunds", "FAQ"), ("/private/salaries", "Salaries"),
               ("https://elsewhere.example.org/", "Elsewhere"), ("mailto:hr@acme.example", "Mail")])
    site.html("/guide", "Engineering guide", "Code review happens within one working day.",
              [("/guide/oncall", "On-call"), ("/", "Home")])
    site.html("/guide/oncall", "On-call rotation", "The pager rotates every Monday at noon.")
    site.html("/faq", "Frequently asked questions", "Refunds are issued within fourteen days of a request.")
    site.html("/private/salaries", "Salaries", "Confidential.")


def search(client, query):
    r = client.post("/collections/docs/search/instant", {"query": query, "limit": 3}, format="json")
    assert r.status_code == 200, r.content
    return [x["airweave_system_metadata"]["original_entity_id"] for x in r.json()["results"]]


def run(client, connection_id):
    r = client.post(f"/source-connections/{connection_id}/run")
    assert r.status_code == 200, r.content
    return client.get(f"/source-connections/{connection_id}/jobs").json()[0]


def test_lifecycle_create_sync_search_edit_delete(site, private_hosts, client, make_collection):
    build_handbook(site)
    make_collection()
    r = client.post("/source-connections", {"short_name": "website", "readable_collection_id": "docs",
                                            "config": {"start_url": site.url + "/"}}, format="json")
    assert r.status_code == 201, r.content
    connection_id = r.json()["id"]
    job = client.get(f"/source-connections/{connection_id}/jobs").json()[0]
    assert (job["status"], job["entities_inserted"]) == ("completed", 4)
    pages = {e.entity_id: e for e in Entity.objects.filter(source_connection_id=connection_id)}
    assert set(pages) == {f"{site.url}/", f"{site.url}/guide", f"{site.url}/guide/oncall", f"{site.url}/faq"}
    assert "/private/salaries" not in site.hits  # robots.txt
    faq = pages[f"{site.url}/faq"]
    assert faq.name == "Frequently asked questions" and faq.web_url == f"{site.url}/faq"
    assert faq.breadcrumbs == [{"entity_id": "127.0.0.1", "name": "127.0.0.1", "entity_type": "WebSite"}]
    assert faq.raw_source_fields["language"] == "en" and faq.raw_source_fields["depth"] == 1
    assert search(client, "how long do refunds take")[0] == f"{site.url}/faq"

    site.html("/faq", "Frequently asked questions", "Refunds are now issued within three days, by bank transfer.")
    job = run(client, connection_id)
    assert (job["status"], job["entities_updated"], job["entities_kept"], job["entities_inserted"]) == \
        ("completed", 1, 3, 0)
    r = client.post("/collections/docs/search/instant", {"query": "bank transfer refunds", "limit": 1}, format="json")
    assert "bank transfer" in r.json()["results"][0]["textual_representation"]

    del site.pages["/guide/oncall"]  # still linked, but gone: 404
    job = run(client, connection_id)
    assert (job["status"], job["entities_deleted"]) == ("completed", 1)
    assert f"{site.url}/guide/oncall" not in search(client, "when does the pager rotate")


def crawl(site, **config) -> tuple[list, WebsiteSource]:
    source = WebsiteSource(WebsiteSource.validate_config({"start_url": site.url + "/", **config}), {})
    entities = list(source.generate_entities({}))
    source.close()
    return entities, source


def test_depth_and_page_caps(site, private_hosts):
    build_handbook(site)
    entities, source = crawl(site, max_depth=1)
    assert {e.entity_id for e in entities} == {f"{site.url}/", f"{site.url}/guide", f"{site.url}/faq"}
    assert source.is_full_listing()
    entities, source = crawl(site, max_pages=2)
    assert len(entities) == 2 and not source.is_full_listing()  # capped: no deletions from this run


def test_sitemap_start_url(site, private_hosts):
    build_handbook(site)
    site.pages["/sitemap.xml"] = (200, "application/xml", f"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>{site.url}/sitemap-pages.xml</loc></sitemap>
</sitemapindex>""")
    site.pages["/sitemap-pages.xml"] = (200, "text/xml", f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{site.url}/faq</loc></url><url><loc>{site.url}/guide/oncall</loc></url>
  <url><loc>https://elsewhere.example.org/x</loc></url>
</urlset>""")
    source = WebsiteSource(WebsiteSource.validate_config({"start_url": site.url + "/sitemap.xml", "max_depth": 0}), {})
    assert sorted(e.entity_id for e in source.generate_entities({})) == [f"{site.url}/faq", f"{site.url}/guide/oncall"]


def test_meta_robots_noindex_nofollow_and_rel_nofollow(site, private_hosts):
    site.html("/", "Index", "Start here.", [("/hidden", "Hidden"), ("/ads", "Ads")])
    site.pages["/"] = (200, "text/html", site.pages["/"][2].replace('<a href="/ads"', '<a rel="nofollow" href="/ads"'))
    site.html("/hidden", "Hidden hub", "Not for the index.", [("/leaf", "Leaf")],
              head='<meta name="robots" content="noindex">')
    site.html("/leaf", "Leaf", "Reached through a noindex page.", [("/never", "Never")],
              head='<meta name="robots" content="nofollow">')
    entities, _ = crawl(site)
    assert {e.entity_id for e in entities} == {f"{site.url}/", f"{site.url}/leaf"}
    assert "/ads" not in site.hits and "/never" not in site.hits


def test_redirects_off_site_are_not_followed_and_non_html_is_skipped(site, private_hosts):
    site.html("/", "Index", "Start.", [("/out", "Out"), ("/report.pdf", "PDF"), ("/moved", "Moved")])
    site.pages["/out"] = (302, "text/html", "http://localhost.localdomain:1/")
    site.pages["/moved"] = (301, "text/html", site.url + "/new-home")
    site.html("/new-home", "New home", "The page that moved.")
    site.pages["/report.pdf"] = (200, "application/pdf", "%PDF-1.4")
    entities, _ = crawl(site)
    assert {e.entity_id for e in entities} == {f"{site.url}/", f"{site.url}/new-home"}
    assert "/report.pdf" in site.hits and "/new-home" in site.hits


def test_robots_txt_that_fails_fails_the_job_instead_of_deleting(site, private_hosts, make_collection, settings):
    from connectors.services import source_connection_create
    from connectors.sync.services import sync_job_run, sync_job_start

    settings.AIRWEAVE_HTTP_MAX_ATTEMPTS = 1  # no retry sleeps in this test
    site.pages["/robots.txt"] = (503, "text/plain", "down")
    connection = source_connection_create(collection=make_collection(), short_name="website",
                                          config={"start_url": site.url + "/"}, sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.error_category) == ("failed", "robots_unavailable")


def test_loopback_and_private_start_urls_are_refused_by_default(client, make_collection):
    make_collection()
    for url in ["http://127.0.0.1:8000/", "http://localhost/docs", "http://169.254.169.254/latest/", "ftp://x.org/"]:
        r = client.post("/source-connections", {"short_name": "website", "readable_collection_id": "docs",
                                                "config": {"start_url": url}}, format="json")
        assert r.status_code == 422, url
        assert r.json()["detail"][0]["loc"] == ["body", "config"]


def test_a_name_resolving_to_loopback_is_refused_when_crawling(site, make_collection):
    from connectors.services import source_connection_create
    from connectors.sync.services import sync_job_run, sync_job_start

    build_handbook(site)
    port = site.url.rsplit(":", 1)[1]
    connection = source_connection_create(collection=make_collection(), short_name="website",
                                          config={"start_url": f"http://127.1:{port}/"}, sync_immediately=False)
    job = sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)
    assert (job.status, job.error_category) == ("failed", "blocked_address")
    assert site.hits == []
    assert SourceConnection.objects.get(pk=connection.pk).status == "error"


def test_normalize_url():
    assert normalize_url("HTTPS://Example.COM:443/a?b=1#frag") == "https://example.com/a?b=1"
    assert normalize_url("http://example.com") == "http://example.com/"
    assert normalize_url("http://[::1]:8080/x") == "http://[::1]:8080/x"
