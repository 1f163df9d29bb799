"""The admin of syncs (schedules) and sync jobs (read-only, cancellable)."""
from __future__ import annotations

from django.contrib import admin

from airweave.collections.models import Sync, SyncJob
from connectors.admin.actions import cancel_jobs
from connectors.admin.forms import SyncForm
from connectors.services import source_connection_update


@admin.register(Sync)
class SyncAdmin(admin.ModelAdmin):
    form = SyncForm
    list_display = ["source_connection", "cron_schedule", "next_run_at", "continuous", "organization"]
    list_filter = ["continuous", "organization"]
    search_fields = ["source_connection__name", "cron_schedule"]
    list_select_related = ["source_connection", "organization"]
    readonly_fields = ["source_connection", "organization", "next_run_at"]
    fields = ["source_connection", "organization", "cron_schedule", "next_run_at", "continuous", "cursor_field"]

    def has_add_permission(self, request):
        return False  # a sync is created with its source connection

    def save_model(self, request, obj, form, change):
        source_connection_update(source_connection=obj.source_connection, modified_by=request.user, for_api=False,
                                 schedule={"cron": obj.cron_schedule, "continuous": obj.continuous,
                                           "cursor_field": obj.cursor_field})


@admin.register(SyncJob)
class SyncJobAdmin(admin.ModelAdmin):
    list_display = ["short_id", "source_connection", "status", "started_at", "duration", "entities_inserted",
                    "entities_updated", "entities_deleted", "entities_kept", "entities_skipped", "entities_failed",
                    "error_category"]
    list_filter = ["status", "error_category", "force_full_sync", "source_connection__short_name", "organization"]
    search_fields = ["id", "source_connection__name", "error"]
    list_select_related = ["source_connection"]
    date_hierarchy = "created_at"
    actions = ["cancel_jobs"]
    fieldsets = [
        (None, {"fields": ["id", "source_connection", "status", "force_full_sync", "created_at", "started_at",
                           "completed_at", "duration", "last_progress_at"]}),
        ("Counters", {"fields": ["entities_inserted", "entities_updated", "entities_deleted", "entities_kept",
                                 "entities_skipped", "entities_failed", "chunks_embedded", "entities_encountered"]}),
        ("Error", {"fields": ["error_category", "error", "error_details"]}),
    ]
    readonly_fields = [f.name for f in SyncJob._meta.fields] + ["duration"]

    @admin.display(description="job", ordering="id")
    def short_id(self, obj) -> str:
        return str(obj.id)[:8]

    @admin.display(description="duration")
    def duration(self, obj) -> str:
        seconds = obj.duration_seconds
        if seconds is None:
            return "-"
        minutes, rest = divmod(seconds, 60)
        return f"{int(minutes)} min {rest:.1f} s" if minutes else f"{rest:.1f} s"

    def has_add_permission(self, request):
        return False  # jobs are started with the "run a sync" action

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or obj.status not in SyncJob.ACTIVE_STATUSES)

    @admin.action(description="Cancel the selected jobs", permissions=["change"])
    def cancel_jobs(self, request, queryset):
        cancel_jobs(self, request, queryset)
