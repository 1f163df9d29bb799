"""The one scoping helper: every read of tenant data for a caller goes through `scoped`.

Selectors build their querysets with `scoped(Model, organization)` instead of
`Model.objects`, and faces (REST views, consumers, web pages, MCP tools) never touch
`.objects` at all — they call selectors. A test (tests/tenancy/test_scoping.py) checks both,
so a view cannot forget the organization: there is no unscoped path to forget it on.
"""
from __future__ import annotations

import uuid

from django.db.models import Model, QuerySet


class TenantRequired(LookupError):
    """A tenant read was asked without an organization (a programming error, never user input)."""


def organization_pk(organization) -> uuid.UUID:
    """The primary key of `organization` (an Organization, a UUID or its string). Raises TenantRequired."""
    if organization is None:
        raise TenantRequired("tenant data is read for an organization; none was given")
    pk = getattr(organization, "pk", organization)
    if pk is None:
        raise TenantRequired("tenant data is read for a saved organization")
    return pk if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk))


def scoped(source: type[Model] | QuerySet, organization) -> QuerySet:
    """The rows of `source` (a tenant model or a queryset of one) that belong to `organization`.

    Every tenant model has an `organization` foreign key or a plain `organization_id` column
    (chunks); both filter on the `organization_id` column. Raises TenantRequired when
    `organization` is None, and TypeError for a model that is not tenant data.
    """
    queryset = source if isinstance(source, QuerySet) else source._default_manager.all()
    model = queryset.model
    if not any(f.attname == "organization_id" for f in model._meta.concrete_fields):
        raise TypeError(f"{model.__name__} is not tenant data (it has no organization)")
    return queryset.filter(organization_id=organization_pk(organization))
