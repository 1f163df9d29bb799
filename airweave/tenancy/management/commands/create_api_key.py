"""python manage.py create_api_key --org NAME: prints a new API key on its last line."""
from django.conf import settings
from django.core.management.base import BaseCommand

from airweave.tenancy.services import API_KEY_DEFAULT_DAYS, api_key_create, organization_get_or_create


class Command(BaseCommand):
    help = "Create an API key for an organization (created if needed). The key is printed once, on the last line."

    def add_arguments(self, parser):
        parser.add_argument("--org", default=settings.AIRWEAVE_DEFAULT_ORG, help="organization name")
        parser.add_argument("--name", default="cli", help="a label for the key")
        parser.add_argument("--days", type=int, default=API_KEY_DEFAULT_DAYS, help="days until the key expires (1-365)")

    def handle(self, *args, org, name, days, **options):
        if not 1 <= days <= 365:
            self.stderr.write("--days must be between 1 and 365")
            raise SystemExit(2)
        organization = organization_get_or_create(name=org)
        issued = api_key_create(organization=organization, name=name, expires_in_days=days)
        self.stderr.write(f"API key for organization '{organization.name}' (prefix aw_{issued.api_key.prefix}), "
                          f"expires {issued.api_key.expires_at:%Y-%m-%d}. It is shown only once:")
        self.stdout.write(issued.key)
