from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "airweave.tenancy"
    label = "tenancy"
    verbose_name = "Tenancy"
