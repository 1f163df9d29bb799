from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors"

    def ready(self):
        from connectors import registry

        registry.autodiscover()
