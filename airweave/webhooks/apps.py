from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "airweave.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self):
        from airweave.events import on_domain_event
        from airweave.webhooks.services import webhook_event_publish

        # Services below (collections, source connections, sync jobs) publish domain events
        # without knowing who listens: webhooks subscribe here.
        on_domain_event(webhook_event_publish)
