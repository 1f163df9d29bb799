"""Metrics computed at scrape time from the database and the job broker.

They describe the whole deployment, not one process: jobs by state, the queue's depth, and the
sync counters summed over every job (so `rate(airweave_sync_entities_total[5m])` is the entities
per second indexed by every worker of every machine).
"""
from __future__ import annotations

import logging

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from airweave.collections.selectors import sync_job_status_counts, sync_job_totals

logger = logging.getLogger(__name__)


def queue_depth() -> int | None:
    """Tasks waiting in django-q2's broker (the ORM table, or Redis with REDIS_URL); None if it cannot be read."""
    from django_q.brokers import get_broker

    try:
        return int(get_broker().queue_size())
    except Exception:
        logger.warning("the job queue's depth could not be read", exc_info=True)
        return None


class DatabaseCollector(Collector):
    """Yields airweave_sync_jobs{state}, airweave_queue_depth, airweave_sync_entities_total{action},
    airweave_sync_chunks_embedded_total and airweave_sync_stage_seconds_total{stage}. Three queries per scrape."""

    def collect(self):
        jobs = GaugeMetricFamily("airweave_sync_jobs", "Sync jobs by state, every organization.", labels=["state"])
        for state, n in sync_job_status_counts().items():
            jobs.add_metric([state], n)
        yield jobs
        depth = queue_depth()
        if depth is not None:
            yield GaugeMetricFamily("airweave_queue_depth", "Tasks waiting in the job queue.", value=depth)
        totals = sync_job_totals()
        entities = CounterMetricFamily("airweave_sync_entities", "Entities handled by sync jobs, by action.",
                                       labels=["action"])
        for action, n in totals["entities"].items():
            entities.add_metric([action], n)
        yield entities
        yield CounterMetricFamily("airweave_sync_chunks_embedded", "Chunks embedded by sync jobs.",
                                  value=totals["chunks_embedded"])
        stages = CounterMetricFamily("airweave_sync_stage_seconds", "Seconds spent by sync jobs per stage.",
                                     labels=["stage"])
        for stage, seconds in totals["stage_seconds"].items():
            stages.add_metric([stage], seconds)
        yield stages
