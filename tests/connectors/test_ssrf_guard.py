"""The SSRF guard of the source HTTP client: private, loopback, link-local and reserved addresses refused.

Refusals before sending are tested with IP literals and redirects (through `responses`);
the connect-time check is tested against a real local HTTP server, reached by names that
resolve to loopback, with no request ever arriving unless the settings allow it.
"""
from __future__ import annotations

import http.server
import threading

import pytest
import responses

from connectors.http import BlockedAddress, HttpClient
from connectors.http.ssrf import address_allowed, check_url, resolve_allowed


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/", "http://127.8.9.10:8080/x", "http://10.0.0.5/", "http://172.16.3.4/", "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/", "http://0.0.0.0/", "http://[::1]/",
    "http://[fe80::1]/", "http://[fd00::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:169.254.169.254]/",
    "http://224.0.0.1/", "http://240.0.0.1/", "http://localhost/", "http://LOCALHOST./", "http://api.localhost/",
])
def test_private_loopback_link_local_and_reserved_hosts_are_refused(url):
    with pytest.raises(BlockedAddress) as info:
        check_url(url)
    assert info.value.category == "blocked_address"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://example.com/", "http:///nohost"])
def test_other_schemes_and_hostless_urls_are_refused(url):
    with pytest.raises(BlockedAddress):
        check_url(url)


def test_public_addresses_and_names_pass_the_early_check():
    check_url("https://93.184.216.34/")
    check_url("https://[2606:4700::6810:84e5]/")
    check_url("https://api.github.com/repos")  # names are checked at connect time, after resolution
    assert address_allowed("8.8.8.8") and not address_allowed("127.0.0.1")


def test_settings_open_private_hosts_or_chosen_networks(settings):
    settings.AIRWEAVE_ALLOWED_PRIVATE_NETWORKS = ["10.20.0.0/16"]
    assert address_allowed("10.20.3.4") and not address_allowed("10.21.0.1")
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True
    check_url("http://127.0.0.1/")
    assert address_allowed("169.254.169.254")


def test_a_name_resolving_to_any_private_address_is_refused(monkeypatch):
    import socket

    answers = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443)),
               (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", 443))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers)
    with pytest.raises(BlockedAddress, match="10.0.0.7"):
        resolve_allowed("rebind.example.com", 443)
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers[:1])
    assert resolve_allowed("ok.example.com", 443) == "93.184.216.34"


def test_a_redirect_to_a_private_address_is_refused():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add("GET", "https://files.example.com/doc", status=302,
                 headers={"Location": "http://169.254.169.254/latest/meta-data/iam"})
        rsps.add("GET", "http://169.254.169.254/latest/meta-data/iam", body="secret")
        with pytest.raises(BlockedAddress):
            HttpClient(sleep=lambda s: None).get("https://files.example.com/doc")
        assert [c.request.url for c in rsps.calls] == ["https://files.example.com/doc"]


@pytest.fixture
def local_server():
    hits = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b"hello from loopback"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], hits
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("host", ["localhost", "127.1", "2130706433", "127.0.0.1"])
def test_a_real_loopback_server_is_never_reached(local_server, host):
    port, hits = local_server
    with pytest.raises(BlockedAddress):
        HttpClient(max_attempts=1).get(f"http://{host}:{port}/secret")
    assert hits == []


def test_the_setting_lets_tests_and_on_premise_deployments_reach_local_servers(local_server, settings):
    port, hits = local_server
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True
    assert HttpClient().get(f"http://127.1:{port}/page").text == "hello from loopback"
    assert hits == ["/page"]


def test_an_allowed_network_reaches_its_server_through_the_connect_time_check(local_server, settings):
    port, hits = local_server
    settings.AIRWEAVE_ALLOWED_PRIVATE_NETWORKS = ["127.0.0.0/8"]
    assert HttpClient().get(f"http://2130706433:{port}/ok").status_code == 200
    assert hits == ["/ok"]
