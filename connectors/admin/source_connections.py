"""The admin of source connections: the generated form, saving through the services, sync actions."""
from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.template.response import TemplateResponse
from django.urls import path, reverse

from airweave.collections.models import Entity, SourceConnection, SyncJob
from connectors.admin.actions import cancel_jobs, start_syncs
from connectors.admin.forms import AUTH_PREFIX, CONFIG_PREFIX, source_connection_form, source_of
from connectors.admin.oauth import oauth_start
from connectors.registry import all_sources, get_source
from connectors.services import SourceConnectionError, source_connection_create, source_connection_update


@admin.register(SourceConnection)
class SourceConnectionAdmin(admin.ModelAdmin):
    list_display = ["name", "short_name", "collection", "organization", "status", "auth_method",
                    "is_authenticated", "entity_count", "modified_at"]
    list_filter = ["short_name", "status", "auth_method", "is_authenticated", "organization"]
    search_fields = ["name", "description", "short_name", "collection__readable_id", "collection__name"]
    list_select_related = ["collection", "organization"]
    autocomplete_fields = ["collection"]
    actions = ["run_sync", "force_full_sync", "cancel_active_jobs"]
    change_form_template = "admin/connectors/sourceconnection/change_form.html"

    def get_queryset(self, request):
        # A correlated count: evaluated for the rows of the page only (a join + GROUP BY would
        # count every entity of every connection before paginating).
        per_connection = (Entity.objects.filter(source_connection=OuterRef("pk")).order_by()
                          .values("source_connection").annotate(n=Count("*")).values("n"))
        return super().get_queryset(request).annotate(entity_total=Coalesce(Subquery(per_connection), 0))

    @admin.display(description="entities", ordering="entity_total")
    def entity_count(self, obj) -> int:
        return getattr(obj, "entity_total", 0)

    # the generated form
    def _source_cls(self, request, obj=None):
        return source_of(obj.short_name if obj is not None else request.GET.get("source"))

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = source_connection_form(self._source_cls(request, obj))
        form = super().get_form(request, obj, change, **kwargs)
        return form

    def get_fieldsets(self, request, obj=None):
        source_cls = self._source_cls(request, obj)
        # View-only users get the stored values, read-only (the generated fields are form fields only).
        editable = source_cls is not None and (obj is None or self.has_change_permission(request, obj))
        main = ["short_name", "collection", "organization", "name", "description", "status", "auth_method",
                "is_authenticated", "oauth"] if obj else ["collection", "name", "description"]
        fieldsets = [(source_cls.name if source_cls else "Source connection", {"fields": main})]
        if not editable:
            fieldsets.append(("Configuration", {"fields": ["config"]}))
        elif source_cls.config_fields:
            fieldsets.append(("Configuration", {"fields": [CONFIG_PREFIX + f.name for f in source_cls.config_fields]}))
        if editable and source_cls.auth_fields:
            fieldsets.append(("Authentication", {"fields": [AUTH_PREFIX + f.name for f in source_cls.auth_fields],
                                                 "description": "Secrets are write-only."}))
        fieldsets.append(("Schedule", {"fields": ["cron_schedule" if editable else "schedule"]}))
        if obj is not None:
            fieldsets.append(("Last error", {"fields": ["error_category", "error_message"],
                                             "classes": ["collapse"]}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        fields = ["short_name", "collection", "organization", "status", "auth_method", "is_authenticated", "oauth",
                  "error_category", "error_message"]
        if self._source_cls(request, obj) is None:
            fields += ["config", "schedule"]
        return fields

    @admin.display(description="Cron schedule")
    def schedule(self, obj) -> str:
        sync = getattr(obj, "sync", None)
        return (sync.cron_schedule if sync else "") or "-"

    @admin.display(description="OAuth")
    def oauth(self, obj) -> str:
        if obj is None or "oauth_browser" not in getattr(source_of(obj.short_name), "auth_methods", ()):
            return "-"
        return "authenticated" if obj.is_authenticated else "not authenticated yet"

    def add_view(self, request, form_url="", extra_context=None):
        if source_of(request.GET.get("source")) is None:
            return self.source_picker(request)
        extra_context = {**(extra_context or {}), "title": f"Add {get_source(request.GET['source']).name} connection"}
        return super().add_view(request, form_url, extra_context)

    def source_picker(self, request):
        """The first step of adding a connection: which source."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        sources = [{"cls": cls, "url": f"{request.path}?source={cls.short_name}"} for cls in all_sources()]
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "sources": sources,
                   "title": "Choose the source of the new connection"}
        return TemplateResponse(request, "admin/connectors/sourceconnection/pick_source.html", context)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        source_cls = source_of(obj.short_name) if obj else None
        extra = {"oauth_url": None, "unknown_source": obj is not None and source_cls is None}
        if obj is not None and source_cls is not None and "oauth_browser" in source_cls.auth_methods:
            extra["oauth_url"] = reverse("admin:collections_sourceconnection_oauth", args=[obj.pk])
        if extra["unknown_source"]:
            messages.warning(request, f"Source '{obj.short_name}' is not installed on this server: "
                                      "its configuration cannot be edited.")
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def save_model(self, request, obj, form, change):
        """Saves through the services (the same validation and side effects as the REST API)."""
        data = form.cleaned_data
        source_cls = form.source_cls
        try:
            if not change:
                created = source_connection_create(
                    collection=data["collection"], short_name=source_cls.short_name, name=data["name"],
                    description=data.get("description") or "", config=form.config, credentials=form.credentials,
                    cron_schedule=data.get("cron_schedule") or "", sync_immediately=False, created_by=request.user,
                    for_api=False)
                obj.pk = created.pk
                obj.refresh_from_db()
                return
            sync = getattr(obj, "sync", None)
            schedule = {"cron": data.get("cron_schedule") or "", "continuous": bool(sync and sync.continuous),
                        "cursor_field": sync.cursor_field if sync else ""}
            source_connection_update(
                source_connection=obj, name=data["name"], description=data.get("description") or "",
                config=form.config, credentials=form.credentials, schedule=schedule, modified_by=request.user,
                for_api=False)
        except SourceConnectionError as exc:  # checked by the form already; a race or a rule of the service
            raise ValidationError(str(exc)) from None

    # actions
    @admin.action(description="Run a sync of the selected connections", permissions=["change"])
    def run_sync(self, request, queryset):
        self._start(request, queryset, force_full_sync=False)

    @admin.action(description="Force a full sync of the selected connections (applies deletions)",
                  permissions=["change"])
    def force_full_sync(self, request, queryset):
        self._start(request, queryset, force_full_sync=True)

    def _start(self, request, queryset, force_full_sync: bool) -> None:
        start_syncs(self, request, queryset.select_related("sync"), force_full_sync=force_full_sync)

    @admin.action(description="Cancel the running sync of the selected connections", permissions=["change"])
    def cancel_active_jobs(self, request, queryset):
        jobs = SyncJob.objects.filter(source_connection__in=queryset, status__in=SyncJob.ACTIVE_STATUSES)
        cancel_jobs(self, request, jobs)

    # the OAuth button
    def get_urls(self):
        urls = [path("<path:object_id>/oauth/", self.admin_site.admin_view(self.oauth_start),
                     name="collections_sourceconnection_oauth")]
        return urls + super().get_urls()

    def oauth_start(self, request, object_id):
        """Starts the browser OAuth flow of a connection (connectors.admin.oauth.oauth_start)."""
        return oauth_start(self, request, object_id)
