from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors"

    def ready(self):
        from django.db.models.signals import post_migrate

        from connectors import registry
        from connectors.sync.schedules import ensure_sweeper_schedule

        registry.autodiscover()
        post_migrate.connect(ensure_sweeper_schedule, sender=self)
