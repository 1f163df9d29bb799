"""Tell Django about the raw-SQL keyword tables (state only; migrations 0003 and 0004 own the schema)."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("collections", "0004_keyword_stats")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="KeywordPosting",
                    fields=[
                        ("pk", models.CompositePrimaryKey("chunk_id", "term", blank=True, editable=False, primary_key=True,
                                                          serialize=False)),
                        ("collection_id", models.UUIDField()),
                        ("term", models.TextField()),
                        ("chunk_id", models.UUIDField()),
                        ("tf", models.SmallIntegerField()),
                        ("dl", models.IntegerField()),
                    ],
                    options={"db_table": "collections_keyword_posting"},
                ),
                migrations.CreateModel(
                    name="KeywordStats",
                    fields=[
                        ("collection_id", models.UUIDField(primary_key=True, serialize=False)),
                        ("chunk_count", models.BigIntegerField()),
                        ("total_length", models.BigIntegerField()),
                    ],
                    options={"db_table": "collections_keyword_stats", "verbose_name_plural": "keyword stats"},
                ),
            ],
            database_operations=[],
        )
    ]
