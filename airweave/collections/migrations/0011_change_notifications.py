"""Change notifications: a per-connection URL token, and the debounce's follow-up flag on Sync."""
from django.db import migrations, models

import airweave.collections.models


def give_each_connection_its_token(apps, schema_editor):
    SourceConnection = apps.get_model("collections", "SourceConnection")
    for connection in SourceConnection.objects.filter(notify_token="").only("id"):
        SourceConnection.objects.filter(pk=connection.pk).update(
            notify_token=airweave.collections.models.new_notify_token())


class Migration(migrations.Migration):
    dependencies = [("collections", "0010_sync_job_worker")]

    operations = [
        # Added empty first: a callable default would give every existing row the same token.
        migrations.AddField("sourceconnection", "notify_token", models.CharField(max_length=64, default="")),
        migrations.RunPython(give_each_connection_its_token, migrations.RunPython.noop),
        migrations.AlterField("sourceconnection", "notify_token", models.CharField(
            max_length=64, default=airweave.collections.models.new_notify_token)),
        migrations.AddField("sourceconnection", "encrypted_notify_secret", models.TextField(blank=True, default="")),
        migrations.AddField("sourceconnection", "notify_subscription", models.JSONField(blank=True, null=True)),
        migrations.AddField("sync", "notify_follow_up", models.BooleanField(default=False)),
        migrations.AddField("sync", "last_notified_at", models.DateTimeField(blank=True, null=True)),
    ]
