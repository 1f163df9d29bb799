"""The CTTI (AACT) source against a real PostgreSQL holding AACT's `ctgov` schema: the tables and
columns AACT documents (studies, brief_summaries, conditions, interventions), a handful of real
ClinicalTrials.gov studies, in a database of the embedded server created for the test."""
from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from django.conf import settings

from airweave.collections.models import Entity, SyncCursor
from connectors.services import source_connection_create
from connectors.sources.ctti import CTTISource
from connectors.sync.services import sync_job_run, sync_job_start

SCHEMA = """
CREATE SCHEMA ctgov;
CREATE TABLE ctgov.studies (nct_id varchar PRIMARY KEY, brief_title text, official_title text, overall_status varchar,
    phase varchar, study_type varchar, enrollment integer, start_date date, completion_date date,
    study_first_posted_date date, last_update_posted_date date);
CREATE TABLE ctgov.brief_summaries (id serial PRIMARY KEY, nct_id varchar, description text);
CREATE TABLE ctgov.conditions (id serial PRIMARY KEY, nct_id varchar, name varchar, downcase_name varchar);
CREATE TABLE ctgov.interventions (id serial PRIMARY KEY, nct_id varchar, intervention_type varchar, name varchar,
    description text);
"""
STUDIES = [
    ("NCT03548935", "Semaglutide Effects on Heart Disease and Stroke in Patients With Overweight or Obesity",
     "SELECT trial", "COMPLETED", "PHASE3", "INTERVENTIONAL", 17604, "2018-10-24", "2023-06-29", "2018-06-07",
     "2024-03-12", "This study will look at how semaglutide affects heart disease in people with obesity.",
     ["Obesity", "Cardiovascular Diseases"], [("DRUG", "Semaglutide"), ("DRUG", "Placebo")]),
    ("NCT02977052", "Pembrolizumab in Melanoma Patients With Brain Metastases", None, "ACTIVE_NOT_RECRUITING",
     "PHASE2", "INTERVENTIONAL", 63, "2016-12-01", None, "2016-11-30", "2024-01-08",
     "A study of pembrolizumab for people with melanoma that has spread to the brain.",
     ["Melanoma", "Brain Metastases"], [("DRUG", "Pembrolizumab")]),
    ("NCT04280705", "Adaptive COVID-19 Treatment Trial (ACTT)", None, "COMPLETED", "PHASE3", "INTERVENTIONAL", 1062,
     "2020-02-21", "2020-05-21", "2020-02-21", "2023-11-02", "Remdesivir against placebo for hospitalized adults.",
     ["COVID-19"], [("DRUG", "Remdesivir")]),
]


@pytest.fixture
def aact():
    """An AACT-shaped database on the embedded server; (config, credentials, engine)."""
    db = settings.DATABASES["default"]
    name = f"aact_{uuid.uuid4().hex[:8]}"
    host, user = db["HOST"], db["USER"]
    url = sa.URL.create("postgresql+psycopg", username=user, host=None if host.startswith("/") else host,
                        port=int(db["PORT"]) if db.get("PORT") else None, database="postgres",
                        query={"host": host} if host.startswith("/") else {})
    admin = sa.create_engine(url, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine = sa.create_engine(url.set(database=name), poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text(SCHEMA))
        for study in STUDIES:
            add_study(conn, *study)
    config = {"host": host, "database": name, "sslmode": "disable", **({"port": int(db["PORT"])} if db.get("PORT") else {})}
    yield config, {"username": user, "password": db.get("PASSWORD") or ""}, engine
    engine.dispose()
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


def add_study(conn, nct_id, title, official, status, phase, kind, enrollment, start, end, first, updated, summary,
              conditions, interventions):
    conn.execute(sa.text("INSERT INTO ctgov.studies VALUES (:n, :t, :o, :s, :p, :k, :e, :sd, :cd, :fd, :ud)"),
                 dict(n=nct_id, t=title, o=official, s=status, p=phase, k=kind, e=enrollment, sd=start, cd=end,
                      fd=first, ud=updated))
    conn.execute(sa.text("INSERT INTO ctgov.brief_summaries (nct_id, description) VALUES (:n, :d)"),
                 dict(n=nct_id, d=summary))
    for condition in conditions:
        conn.execute(sa.text("INSERT INTO ctgov.conditions (nct_id, name, downcase_name) VALUES (:n, :c, :lc)"),
                     dict(n=nct_id, c=condition, lc=condition.lower()))
    for kind_, name in interventions:
        conn.execute(sa.text("INSERT INTO ctgov.interventions (nct_id, intervention_type, name) VALUES (:n, :k, :m)"),
                     dict(n=nct_id, k=kind_, m=name))


@pytest.fixture(autouse=True)
def _local_servers_allowed(settings):
    settings.AIRWEAVE_ALLOW_PRIVATE_HOSTS = True  # the embedded server listens on a local socket


def connect(collection, aact, **config):
    base, credentials, _ = aact
    return source_connection_create(collection=collection, short_name="ctti", config={**base, **config},
                                    credentials=credentials, sync_immediately=False, for_api=False)


def run(connection):
    return sync_job_run(job_id=sync_job_start(source_connection=connection, enqueue=False).id)


def test_studies_are_synced_found_and_followed_by_their_last_update(aact, make_collection, client):
    connection = connect(make_collection(), aact)
    job = run(connection)
    assert (job.status, job.entities_inserted) == ("completed", 3), job.error
    trial = Entity.objects.get(source_connection=connection, entity_id="NCT02977052")
    assert trial.entity_type == "ClinicalTrialEntity" and trial.web_url == "https://clinicaltrials.gov/study/NCT02977052"
    assert [b["name"] for b in trial.breadcrumbs] == ["Active Not Recruiting"]
    assert trial.raw_source_fields["conditions"] == ["Brain Metastases", "Melanoma"]
    assert "Interventions: DRUG: Pembrolizumab" in trial.chunks.get().text
    r = client.post("/collections/docs/search/instant", {"query": "remdesivir hospitalized adults", "limit": 3},
                    format="json")
    assert r.json()["results"][0]["airweave_system_metadata"]["original_entity_id"] == "NCT04280705"
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["last_update"] == "2024-03-12"

    # AACT's daily refresh: one study updated, one withdrawn from the registry.
    _, _, engine = aact
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE ctgov.studies SET overall_status = 'TERMINATED', last_update_posted_date = "
                             "'2024-05-01' WHERE nct_id = 'NCT02977052'"))
        conn.execute(sa.text("DELETE FROM ctgov.studies WHERE nct_id = 'NCT04280705'"))
    job = run(connection)
    assert (job.status, job.entities_updated, job.entities_deleted, job.entities_inserted) == \
        ("completed", 1, 1, 0), job.error
    assert [b["name"] for b in Entity.objects.get(source_connection=connection, entity_id="NCT02977052").breadcrumbs] \
        == ["Terminated"]
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["last_update"] == "2024-05-01"


def test_conditions_and_max_studies_choose_the_selection(aact):
    config, credentials, _ = aact
    source = CTTISource(CTTISource.validate_config({**config, "conditions": ["MELANOMA", "covid"]}), credentials)
    assert sorted(e.entity_id for e in source.generate_entities({})) == ["NCT02977052", "NCT04280705"]
    newest = CTTISource(CTTISource.validate_config({**config, "max_studies": 1}), credentials)
    assert [e.entity_id for e in newest.generate_entities({})] == ["NCT03548935"]
    # A cursor of another selection is not followed: the new selection is listed in full.
    assert sorted(e.entity_id for e in source.generate_entities(newest.next_cursor())) == ["NCT02977052",
                                                                                          "NCT04280705"]
    assert source.is_full_listing()


def test_bad_config_and_a_database_without_aact_are_clear_errors(aact, make_collection):
    config, credentials, engine = aact
    with pytest.raises(ValueError, match="max_studies"):
        CTTISource.validate_config({**config, "max_studies": 0})
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA ctgov CASCADE"))
    job = run(connect(make_collection(), aact))
    assert (job.status, job.error_category) == ("failed", "config_error") and "AACT schema" in job.error


def test_the_default_config_names_the_public_aact_server_with_tls():
    config = CTTISource.validate_config({})
    assert (config["host"], config["database"], config["sslmode"], config["port"]) == (
        "aact-db.ctti-clinicaltrials.org", "aact", "require", 5432)
