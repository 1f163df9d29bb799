"""django-q2 task entry points (run by `manage.py qcluster`)."""
from __future__ import annotations

from connectors.sync.services import sync_job_run


def run_sync_job(job_id: str) -> str:
    """Run one sync job; returns its final status."""
    return sync_job_run(job_id=job_id).status
