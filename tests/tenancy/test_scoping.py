"""The one scoping helper: tenant reads go through `scoped`, faces never touch `.objects`, and selectors
that take an organization all scope by it."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from django.conf import settings

from airweave.collections import selectors as collection_selectors
from airweave.collections.models import Chunk, Collection, SyncJob
from airweave.tenancy import selectors as tenancy_selectors
from airweave.webhooks import selectors as webhook_selectors
from airweave.tenancy.models import User
from airweave.tenancy.scoping import TenantRequired, scoped

ROOT = Path(settings.BASE_DIR)
FACES = ["airweave/api", "airweave/web"]


def test_scoped_filters_by_organization(make_collection, org, other_org):
    mine = make_collection(readable_id="mine")
    make_collection(readable_id="theirs", organization=other_org)
    assert list(scoped(Collection, org)) == [mine]
    assert list(scoped(Collection.objects.filter(readable_id="theirs"), org)) == []
    assert list(scoped(Collection, str(org.pk))) == [mine]  # an id works too
    assert "organization_id" in str(scoped(Chunk, org).query)  # plain-column tenants (chunks) too


def test_scoped_refuses_a_missing_organization_and_non_tenant_models(db):
    with pytest.raises(TenantRequired):
        scoped(Collection, None)
    with pytest.raises(TypeError):
        scoped(User, "00000000-0000-0000-0000-000000000000")


def _python_files(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", [p for f in FACES for p in _python_files(f)], ids=lambda p: str(p.relative_to(ROOT)))
def test_faces_never_query_models_directly(path):
    """Views, consumers and pages read through selectors, which scope by organization: no `.objects` here."""
    tree = ast.parse(path.read_text())
    uses = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "objects"]
    assert uses == [], f"{path.relative_to(ROOT)} queries models directly at lines {uses}: use a selector"


@pytest.mark.parametrize("module", [collection_selectors, tenancy_selectors, webhook_selectors], ids=lambda m: m.__name__)
def test_selectors_that_take_an_organization_scope_by_it(module):
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if function.__module__ != module.__name__ or "organization" not in inspect.signature(function).parameters:
            continue
        source = inspect.getsource(function)
        assert "scoped(" in source or any(f"{other}(" in source for other in _scoping_helpers(module)), \
            f"{module.__name__}.{name} takes an organization but does not read through scoped()"


def _scoping_helpers(module) -> set[str]:
    """Functions of `module` that call scoped() themselves (a selector may build on one of them)."""
    return {name for name, f in inspect.getmembers(module, inspect.isfunction)
            if f.__module__ == module.__name__ and "scoped(" in inspect.getsource(f)}


def test_sync_job_lookup_is_scoped(org, other_org, make_collection, write_files):
    from connectors.services import source_connection_create
    from connectors.sync.jobs import sync_job_create

    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(write_files({"a.md": "x"}))}, sync_immediately=False,
                                          for_api=False)
    job = sync_job_create(sync=connection.sync)
    assert collection_selectors.sync_job_find(organization=org, id=job.id) == job
    assert collection_selectors.sync_job_find(organization=other_org, id=job.id) is None
    assert collection_selectors.sync_job_find(organization=org, id="not-a-uuid") is None
    with pytest.raises(SyncJob.DoesNotExist):
        collection_selectors.sync_job_get(organization=other_org, id=job.id)
