"""Migration 0009 renames what earlier syncs of the export sources stored under the API sources' names."""
from __future__ import annotations

import importlib

from django.db import connection

from connectors.services import source_connection_create
from connectors.sync.services import sync_job_run, sync_job_start

migration = importlib.import_module("airweave.collections.migrations.0009_export_entity_type_names")


def test_stored_slack_export_rows_get_their_own_names(make_collection, tmp_path):
    folder = tmp_path / "export" / "general"
    folder.mkdir(parents=True)
    (tmp_path / "export" / "channels.json").write_text('[{"id": "C1", "name": "general", "created": 1700000000}]')
    (folder / "2024-01-02.json").write_text('[{"type": "message", "ts": "1704200000.000100", "user": "U1",'
                                            ' "text": "the deploy is green"}]')
    collection = make_collection()
    conn = source_connection_create(collection=collection, short_name="slack_export",
                                    config={"path": str(tmp_path / "export")}, sync_immediately=False, for_api=False)
    sync_job_run(job_id=sync_job_start(source_connection=conn, enqueue=False).id)
    with connection.cursor() as cursor:
        for sql in migration._statements(False):  # as an older version stored them
            cursor.execute(sql)
        cursor.execute("SELECT entity_type, breadcrumbs::text FROM collections_entity WHERE source_connection_id = %s"
                           " ORDER BY entity_type", [conn.id])
        assert [row[0] for row in cursor.fetchall()] == ["SlackChannelEntity", "SlackMessageEntity"]
        for sql in migration._statements(True):
            cursor.execute(sql)
        cursor.execute("SELECT entity_type, breadcrumbs::text FROM collections_entity WHERE source_connection_id = %s"
                           " ORDER BY entity_type", [conn.id])
        rows = cursor.fetchall()
        cursor.execute("SELECT DISTINCT entity_type FROM collections_chunk WHERE source_connection_id = %s ORDER BY 1",
                       [conn.id])
        chunk_types = [row[0] for row in cursor.fetchall()]
    assert [row[0] for row in rows] == ["SlackExportChannelEntity", "SlackExportMessageEntity"]
    assert '"entity_type": "SlackExportChannelEntity"' in rows[1][1] and "SlackChannelEntity" not in rows[1][1]
    assert set(chunk_types) <= {"SlackExportChannelEntity", "SlackExportMessageEntity"} and chunk_types
