"""python manage.py doctor: one line per part of the install, OK or the problem and its fix.

Exit status 0 only when every check passes. The checks: airweave.health.
"""
from django.core.management.base import BaseCommand

from airweave.health import run_checks


class Command(BaseCommand):
    help = "Check the install: Python, CPU, database and pgvector, embedding model, Redis, worker, disk."

    def handle(self, *args, **options):
        checks = run_checks()
        width = max(len(check.name) for check in checks)
        for check in checks:
            if check.ok:
                self.stdout.write(f"{self.style.SUCCESS('OK  ')}  {check.name:<{width}}  {check.detail}")
            else:
                self.stdout.write(f"{self.style.ERROR('FAIL')}  {check.name:<{width}}  {check.detail}")
                self.stdout.write(f"      {'':<{width}}  fix: {check.fix}")
        failed = [check.name for check in checks if not check.ok]
        if failed:
            self.stderr.write(f"{len(failed)} of {len(checks)} checks failed: {', '.join(failed)}")
            raise SystemExit(1)
        self.stdout.write(f"All {len(checks)} checks passed.")
