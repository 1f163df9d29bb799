"""The jobs of a source connection: counters, skip reasons grouped, time per pipeline stage."""
from __future__ import annotations

from airweave.collections import selectors
from airweave.collections.models import SourceConnection
from airweave.web.ui.access import not_found, render_page, ui_view

JOBS_PER_PAGE = 50


@ui_view
def job_list(request, caller, readable_id, connection_id):
    """A table of the connection's last jobs (newest first)."""
    try:
        summary = selectors.connection_summary(organization=caller.organization, id=connection_id,
                                               principals=caller.principals)
    except SourceConnection.DoesNotExist:
        raise not_found("Source connection not found") from None
    connection = summary.connection
    if connection.collection.readable_id != readable_id:
        raise not_found("Source connection not found")
    rows = selectors.sync_job_rows(source_connection=connection, limit=JOBS_PER_PAGE)
    return render_page(request, caller, "ui/jobs.html", collection=connection.collection, connection=connection,
                       summary=summary, rows=rows)
