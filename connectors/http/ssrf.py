"""SSRF guard: requests to private, loopback, link-local, reserved and multicast addresses are refused.

Two checks, both in `GuardedAdapter` (a requests transport adapter):
- before sending (every hop of a redirect chain included): the scheme is http(s), and a host
  that is an IP literal or a `localhost` name is checked at once, with no DNS lookup;
- at connect time: the host name is resolved once, every address is checked, and the socket
  connects to the checked address itself, so DNS rebinding between check and connect is
  impossible. TLS still verifies the certificate against the host name.

Settings: `AIRWEAVE_ALLOW_PRIVATE_HOSTS` (bool, default False) turns the guard off (tests of
local servers, on-premise deployments); `AIRWEAVE_ALLOWED_PRIVATE_NETWORKS` (list of CIDRs)
opens only those networks, e.g. a self-hosted Jira at 10.0.4.0/24. Requests sent through an
HTTP(S) proxy are checked before sending only: the proxy must enforce egress rules itself.
"""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from connectors.http.errors import BlockedAddress, redact_url

_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def private_hosts_allowed() -> bool:
    return bool(getattr(settings, "AIRWEAVE_ALLOW_PRIVATE_HOSTS", False))


def _allowed_networks():
    return [ipaddress.ip_network(n, strict=False) for n in getattr(settings, "AIRWEAVE_ALLOWED_PRIVATE_NETWORKS", [])]


def address_allowed(address: str) -> bool:
    """True when `address` (an IPv4/IPv6 string) is a public unicast address, or allowed by settings."""
    if private_hosts_allowed():
        return True
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if any(ip in net for net in _allowed_networks()):
        return True
    # is_global is False for private, loopback, link-local, shared (100.64/10), reserved,
    # unspecified and documentation ranges; multicast can be "global", so it is refused apart.
    return ip.is_global and not ip.is_multicast


def check_url(url: str) -> None:
    """Refuse `url` before any connection: a non-http(s) scheme, or a host that is a refused IP literal
    or a localhost name. Raises BlockedAddress (or BlockedAddress for a URL with no host)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise BlockedAddress(f"only http and https URLs can be fetched, not '{parts.scheme}:' ({redact_url(url)})")
    if not (parts.hostname or "").rstrip("."):
        raise BlockedAddress(f"URL has no host: {redact_url(url)}")
    check_host(parts.hostname)


def check_host(host: str) -> None:
    """Refuse a host a user supplied (a name or an IP literal) before any connection, without a
    DNS lookup: a refused IP literal or a localhost name. Names are checked again when they are
    resolved (resolve_allowed). Raises BlockedAddress."""
    host = (host or "").strip().strip("[]").rstrip(".").lower()
    if private_hosts_allowed():
        return
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        if host in _LOCAL_NAMES or host.endswith(".localhost"):
            raise BlockedAddress(f"refused to connect to {host}: a loopback host") from None
        return
    if not address_allowed(host):
        raise BlockedAddress(f"refused to connect to {host}: a private, loopback, link-local or reserved address")


def resolve_allowed(host: str, port: int) -> str:
    """Resolve `host` and return an address to connect to. Raises BlockedAddress when any address is refused.

    Refusing when *any* address is private (not just the first) defeats names that resolve
    to a public and a private address at once.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [info[4][0] for info in infos]
    refused = [a for a in addresses if not address_allowed(a)]
    if refused:
        raise BlockedAddress(f"refused to connect to {host}: it resolves to {refused[0]}, a private, loopback, "
                             f"link-local or reserved address")
    return addresses[0]


class _GuardedConnectionMixin:
    def _new_conn(self):
        if private_hosts_allowed():
            return super()._new_conn()
        host = self._dns_host
        self._dns_host = resolve_allowed(host, self.port)
        try:
            return super()._new_conn()
        finally:
            self._dns_host = host


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """A requests adapter with the SSRF guard (see the module docstring). No urllib3-level retries."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_retries", 0)
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": GuardedHTTPConnectionPool,
                                                   "https": GuardedHTTPSConnectionPool}

    def send(self, request, *args, **kwargs):
        check_url(request.url)
        return super().send(request, *args, **kwargs)


def guarded_session(session=None):
    """`session` (a new requests.Session by default) with GuardedAdapter mounted for http and https."""
    import requests

    session = session or requests.Session()
    adapter = GuardedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
