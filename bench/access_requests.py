"""What mirroring permissions costs in vendor requests: per source, the requests of one full sync
that list group memberships and read permissions, against those that list and read the content.

Runs each access world of tests/access/test_source_matrix.py (the vendor fakes of
tests/connectors, documented request and response shapes) in-process, without the database:
`generate_access_memberships()` then `generate_entities({})`, as the sync pipeline calls them,
and counts the HTTP requests each makes (the fakes answer; nothing leaves the machine). A
request counts as "access" when the memberships listing makes it, or when it reads a permission
endpoint during the listing (`/permissions`, `/collaborations`, `/members`, `/collaborators`, a
team listing ending in `/teams`, `/restriction/`, `get_current_account`, Drive's `about`,
`/repos/<owner>/<name>`; paths that only name a Gmail mailbox or a Teams team do not count).
Prints one line per source and saves JSON under bench/results/. These are counts on small fixed
corpora, not timings.

    .venv/bin/python bench/access_requests.py
"""
from __future__ import annotations

import json
import os
import platform
import re
import sys
from datetime import datetime
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")
os.environ.setdefault("DEBUG", "false")
ACCESS_URL = re.compile(r"/permissions|/restriction/|/collaborations|/members|/collaborators|/teams(\?|$)|"
                        r"get_current_account|/drive/v3/about|/repos/[^/?]+/[^/?]+(\?|$)")


def measure(name: str, build) -> dict:
    """Counts of one world: {source, entities, memberships, membership_requests, listing_requests,
    permission_requests_while_listing}."""
    import responses

    from connectors.registry import get_source

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        world = build(rsps)
        cls = get_source(world.short_name)
        source = cls(cls.validate_config(dict(world.config)), dict(world.credentials))
        before = len(rsps.calls)
        memberships = list(source.generate_access_memberships() or [])
        after_memberships = len(rsps.calls)
        entities = list(source.generate_entities({}))
        listing = [c.request.url for c in rsps.calls[after_memberships:]]
        source.close()
    return {"source": name, "entities": len(entities), "memberships": len(memberships),
            "membership_requests": after_memberships - before, "listing_requests": len(listing),
            "permission_requests_while_listing": sum(bool(ACCESS_URL.search(u)) for u in listing)}


def main() -> None:
    import django

    django.setup()
    from tests.access.test_source_matrix import WORLDS

    rows = [measure(name, build) for name, build in sorted(WORLDS.items())]
    print(f"{'source':<12} {'entities':>8} {'members':>8} {'member req':>10} {'listing req':>11} {'of which access':>15}")
    for r in rows:
        print(f"{r['source']:<12} {r['entities']:>8} {r['memberships']:>8} {r['membership_requests']:>10} "
              f"{r['listing_requests']:>11} {r['permission_requests_while_listing']:>15}")
    out = {"bench": "access-requests", "at": datetime.now().isoformat(timespec="seconds"),
           "machine": platform.platform(), "python": platform.python_version(), "rows": rows}
    results = BENCH_DIR / "results"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for path in (results / f"access-requests-{stamp}.json", results / "access-requests-latest.json"):
        path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"saved {results / f'access-requests-{stamp}.json'}")


if __name__ == "__main__":
    main()
