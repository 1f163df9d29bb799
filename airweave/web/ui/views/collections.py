"""Collections: the list (search, paging), create, the collection page with its connection
panels, connection actions (run, force full sync, cancel, schedule, delete) and collection delete."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from airweave.collections import selectors, services
from airweave.collections.models import Collection, SourceConnection
from airweave.tenancy import policies
from airweave.tenancy.models import Membership
from airweave.web.ui.access import not_found, render_page, ui_view
from airweave.web.ui.forms import CollectionCreateForm, ScheduleForm, attach_error
from connectors import services as connector_services
from connectors.sync.schedules import cron_next_runs
from connectors.sync.services import SyncAlreadyRunning, sync_job_cancel, sync_job_start

PAGE_SIZE = 20


@ui_view
@require_http_methods(["GET", "POST"])
def collection_list(request, caller):
    """The organization's collections, searchable and paged; POST creates one."""
    form = CollectionCreateForm()
    if request.method == "POST":
        form = CollectionCreateForm(request.POST)
        if form.is_valid():
            v = form.cleaned_data
            try:
                collection = services.collection_create(
                    organization=caller.organization, name=v["name"], readable_id=v["readable_id"].strip() or None,
                    embedding_model_name=v["embedding_model_name"], created_by=caller.user)
            except services.CollectionError as exc:
                attach_error(form, exc.field, str(exc))
            except services.CollectionConflict as exc:
                attach_error(form, "readable_id", str(exc))
            else:
                messages.success(request, f"Collection {collection.name} created. Add a source to fill it.")
                return redirect("ui_collection", readable_id=collection.readable_id)
    search = request.GET.get("q", "").replace("\x00", "").strip()[:200]
    total = selectors.collection_count_matching(organization=caller.organization, search=search)
    paginator = Paginator(range(total), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    summaries = selectors.collection_summaries(organization=caller.organization, principals=caller.principals,
                                               skip=page.start_index() - 1 if total else 0, limit=PAGE_SIZE,
                                               search=search)
    return render_page(request, caller, "ui/collections.html", summaries=summaries, form=form, search=search,
                       page=page, total=total, status=400 if form.errors else 200)


def _summary_or_404(caller, readable_id):
    try:
        return selectors.collection_summary(organization=caller.organization, readable_id=readable_id,
                                            principals=caller.principals)
    except Collection.DoesNotExist:
        raise not_found("Collection not found") from None


def _connection_or_404(caller, readable_id, connection_id):
    try:
        summary = selectors.connection_summary(organization=caller.organization, id=connection_id,
                                               principals=caller.principals)
    except SourceConnection.DoesNotExist:
        raise not_found("Source connection not found") from None
    if summary.connection.collection.readable_id != readable_id:
        raise not_found("Source connection not found")
    return summary


COUNTERS = ("inserted", "updated", "deleted", "kept", "skipped", "failed")


def _panel(connection_summary, schedule_form=None, next_runs_of=None):
    """What one connection panel shows, prepared as plain strings: its URLs, the last job's counters
    and times, its schedule form and next runs.

    A collection page renders one panel per connection (50 in the benchmark), so everything a
    template would format per panel (dates, numbers, URLs) is formatted here once, in Python.
    `next_runs_of` memoises the next runs of each distinct cron expression over a page.
    """
    connection = connection_summary.connection
    job = connection_summary.last_job
    sync = getattr(connection, "sync", None)
    cron = sync.cron_schedule if sync else ""
    form = schedule_form or ScheduleForm(initial={"cron": cron})
    next_runs_of = {} if next_runs_of is None else next_runs_of
    if cron and cron not in next_runs_of:
        try:
            next_runs_of[cron] = [r.strftime("%a %Y-%m-%d %H:%M") for r in cron_next_runs(cron)]
        except ValueError:
            next_runs_of[cron] = []
    base = f"{reverse('ui_collection', args=[connection.collection.readable_id])}connections/{connection.id}/"
    duration = job.duration_seconds if job else None
    return {
        "id": str(connection.id), "summary": connection_summary, "schedule_form": form, "next_runs": " · ".join(next_runs_of.get(cron, [])),
        "urls": {"panel": base + "panel", "action": base + "action", "jobs": base + "jobs/",
                 "reconnect": base + "reconnect"},
        "counters": [(name, str(getattr(job, f"entities_{name}", 0) if job else 0)) for name in COUNTERS],
        "started": job.started_at.strftime("%Y-%m-%d %H:%M:%S UTC") if job and job.started_at else "",
        "duration": f"{duration:.1f} s" if duration is not None else "",
        "entity_types": " ".join(f"{t}: {n}" for t, n in connection_summary.entity_types.items()),
    }


@ui_view
def collection_detail(request, caller, readable_id):
    """The collection page: header, one panel per source connection (live over the sync websocket)."""
    summary = _summary_or_404(caller, readable_id)
    if request.GET.get("status") == "error":  # back from an OAuth flow that failed (see the callback)
        messages.error(request, f"Authorization failed: {request.GET.get('message', 'the provider refused')[:300]}")
    elif request.GET.get("status") == "success":
        messages.success(request, "Authorized; the first sync has started.")
    next_runs_of: dict = {}
    return render_page(request, caller, "ui/collection.html", summary=summary, collection=summary.collection,
                       panels=[_panel(c, next_runs_of=next_runs_of) for c in summary.connections])


@ui_view
def connection_panel(request, caller, readable_id, connection_id):
    """One connection panel (htmx swaps it in when a job ends, or after an action)."""
    summary = _connection_or_404(caller, readable_id, connection_id)
    return render_page(request, caller, "ui/_connection_panel.html", panel=_panel(summary),
                       collection=summary.connection.collection)


@ui_view
@require_POST
def collection_delete(request, caller, readable_id):
    """Delete a collection (admins and owners) after the confirmation that names what is lost."""
    policies.require_role(caller.role, Membership.Role.ADMIN, "deleting a collection")
    collection = selectors.collection_find(organization=caller.organization, readable_id=readable_id)
    if collection is None:
        raise not_found("Collection not found")
    if request.POST.get("confirm") != collection.readable_id:
        messages.error(request, f"Type the readable id '{collection.readable_id}' to confirm the deletion.")
        return redirect("ui_collection", readable_id=readable_id)
    services.collection_delete(collection=collection)
    messages.success(request, f"Collection {collection.name} deleted with its sources, entities and chunks.")
    return redirect("ui_collections")


@ui_view
@require_POST
def connection_action(request, caller, readable_id, connection_id):
    """run, force_full, cancel, schedule or delete on one connection; answers the panel for htmx,
    else redirects back to the collection page."""
    summary = _connection_or_404(caller, readable_id, connection_id)
    connection = summary.connection
    action = request.POST.get("action")
    schedule_form = None
    try:
        if action in ("run", "force_full"):
            sync_job_start(source_connection=connection, force_full_sync=action == "force_full")
            messages.success(request, f"Sync of {connection.name} started.")
        elif action == "cancel":
            if summary.active_job is None:
                messages.error(request, "No job of this connection is running.")
            else:
                sync_job_cancel(job=summary.active_job)
                messages.success(request, f"Cancelling the sync of {connection.name}.")
        elif action == "schedule":
            schedule_form = ScheduleForm(request.POST)
            if schedule_form.is_valid():
                try:
                    connector_services.source_connection_update(
                        source_connection=connection, schedule={"cron": schedule_form.cleaned_data["cron"]},
                        modified_by=caller.user)
                except connector_services.SourceConnectionError as exc:
                    schedule_form.add_error("cron", str(exc))
                else:
                    messages.success(request, "Schedule saved." if schedule_form.cleaned_data["cron"]
                                     else "Schedule removed: this connection syncs when you run it.")
                    schedule_form = None
        elif action == "delete":
            policies.require_role(caller.role, Membership.Role.ADMIN, "deleting a source connection")
            connector_services.source_connection_delete(source_connection=connection)
            messages.success(request, f"Source connection {connection.name} deleted with its entities.")
            if request.headers.get("HX-Request"):
                response = render_page(request, caller, "ui/_empty.html")
                response["HX-Redirect"] = reverse("ui_collection", args=[readable_id])
                return response
            return redirect("ui_collection", readable_id=readable_id)
        else:
            messages.error(request, "Unknown action.")
    except SyncAlreadyRunning:
        messages.error(request, "A sync of this connection is already running.")
    if request.headers.get("HX-Request"):
        fresh = _connection_or_404(caller, readable_id, connection_id)
        return render_page(request, caller, "ui/_connection_panel.html", panel=_panel(fresh, schedule_form),
                           collection=fresh.connection.collection, status=400 if schedule_form else 200)
    if schedule_form is not None:
        for error in schedule_form.errors.get("cron", []):
            messages.error(request, error)
    return redirect(f"{reverse('ui_collection', args=[readable_id])}#connection-{connection.id}")


@ui_view
def cron_preview(request, caller):
    """The next three run times of a cron expression, or its error (htmx, as the user types)."""
    expression = request.GET.get("cron", "")[:100]
    try:
        runs, error = cron_next_runs(expression), None
    except ValueError as exc:
        runs, error = [], str(exc)
    return render_page(request, caller, "ui/_cron_preview.html", runs=runs, error=error, expression=expression)

