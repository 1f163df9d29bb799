"""python manage.py index PATH --collection READABLE_ID: sync a folder into a collection, in this process."""
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from airweave.collections.models import Collection, SourceConnection
from airweave.collections.services import CollectionError, collection_create
from airweave.tenancy.services import organization_get_or_create
from connectors.services import SourceConnectionError, source_connection_create
from connectors.sync.services import SyncAlreadyRunning, sync_job_run, sync_job_start


class Command(BaseCommand):
    help = "Index a folder: creates or reuses the collection and its local_files connection, then syncs it."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--collection", required=True, help="readable_id of the collection")
        parser.add_argument("--name", help="collection name when it is created (default: the folder name)")
        parser.add_argument("--org", default=settings.AIRWEAVE_DEFAULT_ORG)
        parser.add_argument("--force-full-sync", action="store_true")
        parser.add_argument("--include", action="append", help="glob of files to include (repeatable)")
        parser.add_argument("--exclude", action="append", help="glob of files to exclude (repeatable)")

    def handle(self, *args, path, collection, name, org, force_full_sync, include, exclude, **options):
        root = Path(path).expanduser().resolve()
        if not root.exists():
            raise CommandError(f"{root} does not exist")
        organization = organization_get_or_create(name=org)
        coll = Collection.objects.filter(organization=organization, readable_id=collection).first()
        if coll is None:
            try:
                coll = collection_create(organization=organization, name=_collection_name(name or root.name),
                                         readable_id=collection)
            except CollectionError as exc:
                raise CommandError(str(exc)) from None
        connection = SourceConnection.objects.filter(collection=coll, short_name="local_files",
                                                     config__path=str(root)).first()
        config = {"path": str(root)}
        if include:
            config["include"] = include
        if exclude:
            config["exclude"] = exclude
        if connection is None:
            try:
                connection = source_connection_create(collection=coll, short_name="local_files", name=f"Files in {root}",
                                                      config=config, sync_immediately=False, for_api=False)
            except SourceConnectionError as exc:
                raise CommandError(str(exc)) from None
        elif connection.config != config:
            from connectors.services import source_connection_update

            source_connection_update(source_connection=connection, config=config, for_api=False)
        try:
            job = sync_job_start(source_connection=connection, force_full_sync=force_full_sync, enqueue=False)
        except SyncAlreadyRunning as exc:
            raise CommandError(str(exc)) from None

        bar = tqdm(desc=f"Indexing {root.name}", unit=" entities", file=self.stderr)

        def on_progress(counters):
            done = counters.inserted + counters.updated + counters.kept + counters.skipped + counters.failed
            bar.update(done - bar.n)
            bar.set_postfix(chunks=counters.chunks_embedded)

        job = sync_job_run(job_id=job.id, on_progress=on_progress)
        bar.close()
        self.stdout.write(
            f"Job {job.id} {job.status} in {job.duration_seconds or 0:.1f}s: "
            f"inserted={job.entities_inserted} updated={job.entities_updated} deleted={job.entities_deleted} "
            f"kept={job.entities_kept} skipped={job.entities_skipped} failed={job.entities_failed} "
            f"chunks_embedded={job.chunks_embedded}"
        )
        for reason, info in ((job.error_details or {}).get("skipped") or {}).items():
            examples = ", ".join(e["entity_id"] for e in info["examples"])
            self.stdout.write(f"  skipped {info['count']} × {reason}: {examples}")
        for note in (job.error_details or {}).get("notes") or []:
            self.stdout.write(f"  note: {note}")
        if job.status != "completed":
            raise CommandError(f"sync {job.status}: {job.error}")


def _collection_name(name: str) -> str:
    name = name.strip() or "collection"
    return (name + " collection")[:64] if len(name) < 4 else name[:64]
