"""CTTI (AACT): clinical trials from the public ClinicalTrials.gov database that CTTI publishes.

AACT (https://aact.ctti-clinicaltrials.org) is a PostgreSQL database refreshed daily from
ClinicalTrials.gov; anyone can read it with a free account (username and password). This source
connects to it (host `aact-db.ctti-clinicaltrials.org`, database `aact`, TLS required, all
changeable for a mirror) with psycopg 3 through the PostgreSQL source's engine and SSRF guard, and
reads the schema `ctgov`: `studies` (title, status, phase, type, dates, enrollment),
`brief_summaries`, `conditions` and `interventions` (aggregated per study).

What is synced: the `max_studies` most recently updated studies (default 1,000; AACT holds over
500,000), optionally only those with a condition containing one of `conditions` (case-insensitive,
e.g. ["type 2 diabetes", "melanoma"]). Incremental by `last_update_posted_date`: the cursor keeps
the newest date synced and later runs read the studies updated on or after it (re-read rows are
kept by their hash); deletions are found by listing the nct_ids of the current selection (one
cheap query), so a study that leaves it (replaced by newer ones, or no longer matching) is deleted.

Entities: ClinicalTrialEntity, `entity_id` = the NCT id, `web_url` = its ClinicalTrials.gov page,
breadcrumbs: the overall status. Cursor: `{"last_update": "YYYY-MM-DD", "selection": <config hash>}`.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from typing import Iterator

from connectors.base import BaseEntity, Breadcrumb, ConfigField, SourceError
from connectors.registry import source
from connectors.sources.sql import SERVER_AUTH, PostgreSQLSource, SQLSource, _category, _short, check_server_config

AACT_HOST = "aact-db.ctti-clinicaltrials.org"
SELECTION = """
    FROM ctgov.studies s
    WHERE (CAST(:no_conditions AS boolean) OR EXISTS (
        SELECT 1 FROM ctgov.conditions c WHERE c.nct_id = s.nct_id AND c.downcase_name LIKE ANY(:patterns)))
    ORDER BY s.last_update_posted_date DESC NULLS LAST, s.nct_id
    LIMIT :max_studies
"""
STUDIES = f"""
    WITH selected AS (SELECT s.nct_id {SELECTION})
    SELECT s.nct_id, s.brief_title, s.official_title, s.overall_status, s.phase, s.study_type, s.enrollment,
           s.start_date, s.completion_date, s.study_first_posted_date, s.last_update_posted_date,
           bs.description AS summary,
           (SELECT string_agg(c.name, '; ' ORDER BY c.name) FROM ctgov.conditions c
             WHERE c.nct_id = s.nct_id) AS conditions,
           (SELECT string_agg(i.intervention_type || ': ' || i.name, '; ' ORDER BY i.name) FROM ctgov.interventions i
             WHERE i.nct_id = s.nct_id) AS interventions
    FROM selected JOIN ctgov.studies s USING (nct_id)
    LEFT JOIN ctgov.brief_summaries bs ON bs.nct_id = s.nct_id
    WHERE CAST(:since AS date) IS NULL OR s.last_update_posted_date >= CAST(:since AS date)
    ORDER BY s.last_update_posted_date, s.nct_id
"""


@dataclass
class ClinicalTrialEntity(BaseEntity):
    """One study registered on ClinicalTrials.gov."""

    nct_id: str = ""
    official_title: str = ""
    status: str = ""
    phase: str = ""
    study_type: str = ""
    conditions: str = ""
    interventions: str = ""
    summary: str = ""

    def textual_representation(self) -> str:
        lines = [f"{self.nct_id}: {self.name}"]
        if self.official_title and self.official_title != self.name:
            lines.append(f"Official title: {self.official_title}")
        lines += [f"{label}: {value}" for label, value in (
            ("Status", self.status), ("Phase", self.phase), ("Study type", self.study_type),
            ("Conditions", self.conditions), ("Interventions", self.interventions)) if value]
        return "\n".join(lines) + ("\n\n" + self.summary.strip() if self.summary.strip() else "")


@source(
    name="CTTI (AACT)",
    short_name="ctti",
    description="Clinical trials from ClinicalTrials.gov through CTTI's public AACT database: titles, status, "
                "phase, conditions, interventions and summaries, synced by their last update.",
    auth_methods=("direct",),
    labels=("Database", "Research"),
    entity_types=(ClinicalTrialEntity,),
    config_fields=(
        ConfigField("conditions", "Conditions", "array", "Only studies with a condition containing one of "
                    "these words (case-insensitive), e.g. [\"melanoma\"]; default: every study.", items_type="string"),
        ConfigField("max_studies", "Studies", "integer", "How many of the most recently updated studies to keep.",
                    default=1000),
        ConfigField("host", "Host", "string", "The AACT server (or a mirror of it).", default=AACT_HOST),
        ConfigField("port", "Port", "integer", "The server's port.", default=5432),
        ConfigField("database", "Database", "string", "The AACT database.", default="aact"),
        ConfigField("sslmode", "SSL mode", "string", "libpq sslmode.", default="require",
                    enum_values=("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
    ),
    auth_fields=SERVER_AUTH,
)
class CTTISource(PostgreSQLSource):
    """See the module docstring. Reads AACT through the PostgreSQL source's engine."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        # BaseSource's checks of the declared fields; not the SQL sources' own (no `tables` here).
        out = super(SQLSource, cls).validate_config(config, for_api=for_api)
        out["conditions"] = [c.strip().casefold() for c in out.get("conditions") or [] if c.strip()]
        if not 1 <= out["max_studies"] <= 100_000:
            raise ValueError("config field 'max_studies' must be between 1 and 100000")
        return check_server_config(out, cls.default_port)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        import sqlalchemy as sa

        selection = self._selection_key()
        since = (cursor or {}).get("last_update") if (cursor or {}).get("selection") == selection else None
        self._full, self._present = since is None, None
        params = self._params(since)
        engine = self.engine()
        try:
            with engine.connect() as conn:
                newest = since
                for row in conn.execute(sa.text(STUDIES), params).mappings():
                    yield self._study(row)
                    if row["last_update_posted_date"]:
                        newest = max(newest or "", row["last_update_posted_date"].isoformat())
                if not self._full:
                    ids = conn.execute(sa.text(f"SELECT s.nct_id {SELECTION}"), params).scalars()
                    self._present = set(ids)
        except sa.exc.OperationalError as exc:
            raise SourceError(f"cannot read the AACT database: {_short(exc)}", category=_category(exc)) from exc
        except sa.exc.ProgrammingError as exc:
            raise SourceError(f"the database has no AACT schema (ctgov.studies ...): {_short(exc)}",
                              category="config_error") from exc
        except sa.exc.SQLAlchemyError as exc:
            raise SourceError(f"AACT error: {_short(exc)}", category="source_error") from exc
        finally:
            engine.dispose()
        self._cursor = {"last_update": newest, "selection": selection} if newest else {}

    def _params(self, since: str | None) -> dict:
        conditions = self.config["conditions"]
        return {"no_conditions": not conditions, "patterns": [f"%{c}%" for c in conditions] or [""],
                "max_studies": self.config["max_studies"], "since": since}

    def _selection_key(self) -> str:
        chosen = {k: self.config.get(k) for k in ("conditions", "max_studies", "host", "database")}
        return hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()[:16]

    def _study(self, row) -> ClinicalTrialEntity:
        nct_id = row["nct_id"]
        return ClinicalTrialEntity(
            entity_id=nct_id, name=row["brief_title"] or nct_id, nct_id=nct_id,
            breadcrumbs=[Breadcrumb(f"status:{row['overall_status'] or 'UNKNOWN'}",
                                    (row["overall_status"] or "UNKNOWN").replace("_", " ").title(), "TrialStatus")],
            created_at=_utc(row["study_first_posted_date"]), updated_at=_utc(row["last_update_posted_date"]),
            web_url=f"https://clinicaltrials.gov/study/{nct_id}",
            official_title=row["official_title"] or "", status=row["overall_status"] or "", phase=row["phase"] or "",
            study_type=row["study_type"] or "", conditions=row["conditions"] or "",
            interventions=row["interventions"] or "", summary=row["summary"] or "",
            raw_source_fields={"nct_id": nct_id, "overall_status": row["overall_status"], "phase": row["phase"],
                               "study_type": row["study_type"], "enrollment": row["enrollment"],
                               "start_date": _iso(row["start_date"]), "completion_date": _iso(row["completion_date"]),
                               "conditions": [c for c in (row["conditions"] or "").split("; ") if c]},
        )

    def is_full_listing(self) -> bool:
        return self._full

    def present_entity_ids(self):
        return self._present

    def next_cursor(self) -> dict:
        return self._cursor


def _utc(day: date | None) -> datetime | None:
    return datetime.combine(day, time(), tzinfo=timezone.utc) if day else None


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None
