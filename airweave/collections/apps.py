from django.apps import AppConfig
from django.db.models.signals import post_migrate


class CollectionsConfig(AppConfig):
    name = "airweave.collections"
    label = "collections"
    verbose_name = "Collections"

    def ready(self):
        from airweave.collections.vector_indexes import ensure_vector_indexes

        post_migrate.connect(ensure_vector_indexes, sender=self)
