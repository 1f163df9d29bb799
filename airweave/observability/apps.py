from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    name = "airweave.observability"
    label = "observability"
    verbose_name = "Observability"

    def ready(self) -> None:
        from airweave.observability.tracing import tracing_configure

        tracing_configure()
