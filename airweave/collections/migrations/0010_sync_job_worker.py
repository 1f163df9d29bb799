from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('collections', '0009_export_entity_type_names'),
    ]

    operations = [
        migrations.AddField(model_name='syncjob', name='worker_host',
                            field=models.CharField(blank=True, default='', max_length=255)),
        migrations.AddField(model_name='syncjob', name='worker_pid',
                            field=models.PositiveIntegerField(blank=True, null=True)),
        migrations.AddField(model_name='syncjob', name='worker_started',
                            field=models.FloatField(blank=True, null=True)),
    ]
