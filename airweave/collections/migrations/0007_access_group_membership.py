# Group memberships per source connection (access control).

import django.db.models.deletion
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('collections', '0006_embedding_storage_main'),
        ('tenancy', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='AccessGroupMembership',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('modified_at', models.DateTimeField(auto_now=True)),
                ('group_id', models.CharField(max_length=512)),
                ('member', models.CharField(max_length=512)),
                ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenancy.organization')),
                ('source_connection', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='access_memberships', to='collections.sourceconnection')),
            ],
            options={
                'ordering': ['group_id', 'member'],
                'indexes': [models.Index(fields=['member', 'source_connection'], name='access_membership_member')],
                'constraints': [models.UniqueConstraint(fields=('source_connection', 'group_id', 'member'), name='uniq_access_membership')],
            },
        ),
    ]
