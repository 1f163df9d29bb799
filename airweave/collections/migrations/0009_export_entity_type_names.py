# The Slack and Notion export sources' entity types got names of their own (SlackExport*, NotionExport*):
# they had shared the names of the API sources' different classes. Renames what earlier syncs stored.

from django.db import migrations

RENAMES = {
    "slack_export": [("SlackChannelEntity", "SlackExportChannelEntity"),
                     ("SlackMessageEntity", "SlackExportMessageEntity")],
    "notion_export": [("NotionPageEntity", "NotionExportPageEntity"),
                      ("NotionDatabaseEntity", "NotionExportDatabaseEntity"),
                      ("NotionFileEntity", "NotionExportFileEntity")],
}


def _statements(forward: bool) -> list[str]:
    sql = []
    for short_name, pairs in RENAMES.items():
        connections = f"(SELECT id FROM collections_sourceconnection WHERE short_name = '{short_name}')"
        for old, new in pairs:
            old, new = (old, new) if forward else (new, old)
            crumb_old, crumb_new = f'"entity_type": "{old}"', f'"entity_type": "{new}"'
            for table, column in (("collections_entity", "source_connection_id"),
                                  ("collections_chunk", "source_connection_id")):
                sql.append(f"UPDATE {table} SET entity_type = '{new}' WHERE entity_type = '{old}'"
                           f" AND {column} IN {connections}")
                sql.append(f"UPDATE {table} SET breadcrumbs = replace(breadcrumbs::text, '{crumb_old}',"
                           f" '{crumb_new}')::jsonb WHERE {column} IN {connections}"
                           f" AND breadcrumbs::text LIKE '%{old}%'")
    return sql


class Migration(migrations.Migration):

    dependencies = [
        ('collections', '0008_sync_job_stage_seconds'),
    ]

    operations = [migrations.RunSQL(_statements(True), reverse_sql=_statements(False))]
