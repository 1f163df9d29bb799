"""The replica router without a running replica: settings forms, routing rules, the fallback.

The real primary-and-replica tests are in test_replicas.py (slow).
"""
from __future__ import annotations

import logging

import pytest
from django.db import connections

from airweave.db_router import ReplicaRouter, choose_read_alias, replicas_reset, search_alias, search_reads
from airweave.observability.metrics import SEARCH_READS
from airweave.settings import replica_database


def test_a_socket_folder_is_the_primarys_database_on_the_server_listening_there():
    primary = {"ENGINE": "django.db.backends.postgresql", "NAME": "airweave", "USER": "postgres", "PASSWORD": "",
               "HOST": "/primary/socket", "PORT": "", "TEST": {"NAME": "test_x"}}
    config = replica_database(" /replica/socket ", primary)
    assert (config["NAME"], config["USER"], config["HOST"]) == ("airweave", "postgres", "/replica/socket")
    assert config["TEST"] == {"MIRROR": "default"}  # under tests it reads the primary's test database
    assert config["OPTIONS"]["connect_timeout"] == 3


def test_a_url_is_parsed_as_database_url_is():
    config = replica_database("postgres://reader:pw@replica-2:5433/airweave", {"CONN_MAX_AGE": 60})
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == ("replica-2", 5433, "airweave", "reader")
    assert config["CONN_MAX_AGE"] == 60


def test_reads_go_to_a_replica_only_inside_a_search_and_writes_never():
    router = ReplicaRouter()
    assert router.db_for_read(None) is None  # Django's default: the primary
    assert router.db_for_write(None) == "default"
    assert router.allow_migrate("replica_1", "collections") is False
    assert router.allow_migrate("default", "collections") is None
    with search_reads() as alias:  # no replica configured here
        assert alias == "default" == search_alias()


@pytest.fixture
def unreachable_replica(tmp_path, django_db_blocker):
    """`replica_1` pointing at a socket folder where no server listens."""
    primary = connections.settings["default"]
    config = replica_database(str(tmp_path), primary)
    connections.settings["replica_1"] = connections.configure_settings(
        {"default": dict(primary), "replica_1": config})["replica_1"]
    replicas_reset()
    with django_db_blocker.unblock():
        yield
        connections["replica_1"].close()
    del connections.settings["replica_1"]
    if hasattr(connections._connections, "replica_1"):
        delattr(connections._connections, "replica_1")
    replicas_reset()


def test_an_unreachable_replica_is_passed_over_logged_and_counted(unreachable_replica, caplog):
    down = SEARCH_READS.labels("primary", "replica_down")
    before = down._value.get()
    with caplog.at_level(logging.WARNING, logger="airweave.db_router"):
        assert choose_read_alias("0/3000148") == "default"
    assert "replica replica_1 passed over" in caplog.text
    assert down._value.get() - before == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="airweave.db_router"):
        assert choose_read_alias() == "default"  # resting: not tried again, not logged again
    assert caplog.text == ""
    assert down._value.get() - before == 2
