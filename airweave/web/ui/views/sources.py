"""Add a source (the wizard): the catalog → the auth method and the source's declared fields →
the OAuth round trip when chosen → the collection page, where the first sync shows live.
Also reconnecting a connection that needs re-authentication."""
from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from airweave.collections import selectors
from airweave.collections.models import SourceConnection
from airweave.tenancy.quotas import QuotaExceeded
from airweave.web.ui.access import collection_or_404, not_found, render_page, ui_view
from airweave.web.ui.forms import SourceConnectionForm, attach_source_error
from connectors import services as connector_services
from connectors import authorization
from connectors.registry import all_sources, get_source


def source_info(cls) -> dict:
    """What pages show of a source class (templates would call the class itself)."""
    return {"name": cls.name, "short_name": cls.short_name, "description": cls.description or "",
            "labels": list(cls.labels), "auth_methods": list(cls.auth_methods), "auth_fields": list(cls.auth_fields)}


@ui_view
def source_catalog(request, caller, readable_id):
    """Step 1: the catalog of `GET /sources` (the same registry), searchable, with label filters."""
    collection = collection_or_404(caller, readable_id)
    query = request.GET.get("q", "").strip().lower()[:100]
    label = request.GET.get("label", "")[:64]
    sources = all_sources()
    labels = sorted({lab for cls in sources for lab in cls.labels})
    shown = [cls for cls in sources
             if (not query or query in cls.name.lower() or query in cls.short_name or query in (cls.description or "").lower())
             and (not label or label in cls.labels)]
    return render_page(request, caller, "ui/add_source.html", collection=collection,
                       sources=[source_info(cls) for cls in shown], labels=labels,
                       query=query, label=label)


@ui_view
@require_http_methods(["GET", "POST"])
def source_configure(request, caller, readable_id, short_name):
    """Steps 2-3: the auth method and the form generated from the source's declared fields; POST
    creates the connection (its first sync starts, or the OAuth flow opens in this browser)."""
    collection = collection_or_404(caller, readable_id)
    try:
        source_cls = get_source(short_name)
    except KeyError:
        raise not_found("Source not found") from None
    form = SourceConnectionForm(source_cls, request.POST or None)
    if request.method == "POST" and form.is_valid():
        back = request.build_absolute_uri(reverse("ui_collection", args=[collection.readable_id]))
        try:
            connection = connector_services.source_connection_create(
                collection=collection, short_name=short_name, name=form.cleaned_data["name"] or None,
                config=form.config(), authentication=form.authentication(back),
                cron_schedule=form.cleaned_data["cron"], sync_immediately=True, created_by=caller.user)
        except connector_services.SourceConnectionError as exc:
            attach_source_error(form, exc.field, str(exc))
        except QuotaExceeded as exc:
            form.add_error(None, str(exc))
        else:
            auth_url = authorization.auth_summary(connection).get("auth_url")
            if auth_url:
                return redirect(auth_url)  # the provider's consent, then back to the collection page
            messages.success(request, f"{connection.name} added; its first sync has started.")
            return redirect(f"{reverse('ui_collection', args=[collection.readable_id])}#connection-{connection.id}")
    return render_page(request, caller, "ui/configure_source.html", collection=collection, source=source_info(source_cls),
                       form=form, groups=form.field_groups(), status=400 if form.errors else 200)


@ui_view
@require_http_methods(["GET", "POST"])
def reconnect(request, caller, readable_id, connection_id):
    """Re-authenticate a connection: new credentials (direct) or a new OAuth flow in this browser."""
    try:
        connection = selectors.connection_summary(organization=caller.organization, id=connection_id).connection
    except SourceConnection.DoesNotExist:
        raise not_found("Source connection not found") from None
    if connection.collection.readable_id != readable_id:
        raise not_found("Source connection not found")
    source_cls = get_source(connection.short_name)
    back = request.build_absolute_uri(reverse("ui_collection", args=[readable_id]))
    error = None
    if request.method == "POST":
        if request.POST.get("method") == "oauth":
            try:
                return redirect(authorization.start_authorization(connection, back, sync_after=True))
            except authorization.AuthorizationError as exc:
                error = str(exc)
        else:
            credentials = {d.name: request.POST.get(f"cred_{d.name}") for d in source_cls.auth_fields
                           if request.POST.get(f"cred_{d.name}")}
            try:
                connector_services.source_connection_reauthenticate(source_connection=connection,
                                                                     credentials=credentials, modified_by=caller.user)
            except connector_services.SourceConnectionError as exc:
                error = str(exc)
            else:
                messages.success(request, f"{connection.name} reconnected; a sync has started.")
                return redirect(f"{back}#connection-{connection.id}")
    return render_page(request, caller, "ui/reconnect.html", collection=connection.collection, connection=connection,
                       source=source_info(source_cls), error=error,
                       has_oauth=bool(set(source_cls.auth_methods) & {"oauth_browser", "oauth_byoc"}),
                       status=400 if error else 200)
