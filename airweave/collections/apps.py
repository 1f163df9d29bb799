from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class CollectionsConfig(AppConfig):
    name = "airweave.collections"
    label = "collections"
    verbose_name = "Collections"

    def ready(self):
        from airweave.collections.vector_indexes import ensure_vector_indexes
        from airweave.dbcheck import check_on_connect

        # Every process checks the database's vector support on its first connection to it.
        connection_created.connect(check_on_connect, dispatch_uid="airweave.dbcheck")

        post_migrate.connect(ensure_vector_indexes, sender=self)
