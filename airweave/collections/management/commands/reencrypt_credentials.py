"""python manage.py reencrypt_credentials: move every stored credential to the newest Fernet key.

Rotation: put a new key first in AIRWEAVE_FERNET_KEYS (`new,old`), run this command, check it
reports no unreadable rows, then remove the old key. Prints counts only, never a secret.
"""
from django.core.management.base import BaseCommand, CommandError

from airweave.collections.services import credentials_reencrypt
from airweave.crypto import generate_key as new_fernet_key


class Command(BaseCommand):
    help = ("Re-encrypt all stored credentials under the newest key of AIRWEAVE_FERNET_KEYS "
            "(--check only verifies that every one decrypts; --generate-key prints a new key).")

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="only check that every credential decrypts")
        parser.add_argument("--generate-key", action="store_true", help="print a new Fernet key and exit")

    def handle(self, *args, check, generate_key, **options):
        if generate_key:
            self.stdout.write(new_fernet_key())
            return
        report = credentials_reencrypt(dry_run=check)
        done = "" if check else f", {report.reencrypted} re-encrypted under the newest key"
        self.stdout.write(f"{report.checked} credentials checked{done}, {len(report.unreadable)} unreadable.")
        if report.unreadable:
            for row in report.unreadable[:50]:
                self.stderr.write(f"unreadable with the configured keys: {row}")
            raise CommandError("some credentials decrypt with none of AIRWEAVE_FERNET_KEYS: add the key they were "
                               "written with (anywhere in the list) and run again")
