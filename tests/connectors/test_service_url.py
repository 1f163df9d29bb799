"""`service_url`: the base URL of a self-hosted service, as the sources that take one validate it."""
from __future__ import annotations

import pytest

from connectors.registry import get_source
from connectors.sources._saas import service_url


def test_a_good_url_loses_its_trailing_slash():
    assert service_url(" https://wiki.example.org/ ", field="base_url", must_be="a URL") == "https://wiki.example.org"


@pytest.mark.parametrize("value", ["wiki.example.org", "ftp://wiki.example.org", "https://", "https://w.org/?a=1"])
def test_what_is_not_an_http_url_names_the_field(value):
    with pytest.raises(ValueError, match=r"config field 'base_url' must be the wiki's URL"):
        service_url(value, field="base_url", must_be="the wiki's URL")


def test_a_loopback_host_is_refused_by_the_ssrf_guard(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(ValueError, match=r"config field 'site_url': "):
        service_url("http://127.0.0.1:8080", field="site_url", must_be="a URL")


@pytest.mark.parametrize("short_name, field", [("bookstack", "base_url"), ("ghost", "site_url"),
                                               ("wordpress", "site_url"), ("redmine", "base_url")])
def test_the_sources_say_which_field_is_wrong(short_name, field):
    cls = get_source(short_name)
    with pytest.raises(ValueError, match=f"config field '{field}' must be"):
        cls.validate_config({field: "not a url"}, for_api=True)
