"""python manage.py search READABLE_ID "query": prints ranked results (score, name, path).

The operator sees everything; `--as-user EMAIL` searches with that user's access instead.
"""
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from airweave.collections.access import principals_for_user
from airweave.collections.models import Collection
from airweave.tenancy.models import User
from search.filters import FilterError
from search.instant import InstantSearchRequest, SearchRequestError, search_instant


class Command(BaseCommand):
    help = "Search a collection and print ranked results."

    def add_arguments(self, parser):
        parser.add_argument("collection")
        parser.add_argument("query")
        parser.add_argument("--org", default=settings.AIRWEAVE_DEFAULT_ORG)
        parser.add_argument("--strategy", default="hybrid", choices=["hybrid", "semantic", "keyword"])
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--all-chunks", action="store_true", help="show every matching chunk, not one per entity")
        parser.add_argument("--as-user", metavar="EMAIL", help="search with this user's access (default: everything)")

    def handle(self, *args, collection, query, org, strategy, limit, all_chunks, as_user=None, **options):
        coll = Collection.objects.filter(organization__name=org, readable_id=collection).first()
        if coll is None:
            raise CommandError(f"no collection '{collection}' in organization '{org}'")
        principals = None
        if as_user:
            user = User.objects.filter(email__iexact=as_user.strip()).first()
            if user is None:
                raise CommandError(f"no user with e-mail '{as_user}'")
            principals = principals_for_user(user=user, organization=coll.organization)
        try:
            response = search_instant(collection=coll, principals=principals, request=InstantSearchRequest(
                query=query, retrieval_strategy=strategy, limit=limit, collapse_entities=not all_chunks))
        except (SearchRequestError, FilterError) as exc:
            raise CommandError(str(exc)) from None
        if not response.results:
            self.stdout.write("No results.")
        for rank, r in enumerate(response.results, start=1):
            path = r["web_url"] or r["airweave_system_metadata"]["original_entity_id"]
            self.stdout.write(f"{rank:>3}. {r['relevance_score']:.4f}  {r['name']}  {path}")
