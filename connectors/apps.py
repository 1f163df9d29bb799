from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors"

    def ready(self):
        from django.db.models.signals import post_migrate

        from connectors import registry
        from connectors.auth.tokens import default_auth_for
        from connectors.base import BaseSource
        from connectors.http import client_for_source
        from django_q.signals import post_spawn

        from connectors.notifications.services import ensure_renewal_schedule
        from connectors.sync.schedules import ensure_sweeper_schedule, sweep_on_worker_spawn

        # The source contract receives its HTTP client and default auth from this layer above it.
        BaseSource.http_client_factory = staticmethod(client_for_source)
        BaseSource.default_auth_factory = staticmethod(default_auth_for)
        registry.autodiscover()
        post_migrate.connect(ensure_sweeper_schedule, sender=self)
        post_spawn.connect(sweep_on_worker_spawn, dispatch_uid="airweave-sweep-on-worker-spawn")
        post_migrate.connect(ensure_renewal_schedule, sender=self)
