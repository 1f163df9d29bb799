"""The operator console for sources: source connections, their syncs and sync jobs.

A source connection's form is generated from its source's declaration (connectors.base): one
field per config field and per auth field, typed as declared; secrets are write-only (never
rendered; left empty, the stored value stays). Validation is the declaration's own
(`validate_config`, `validate_auth`) and saving goes through the same services as the REST API.
Actions start a sync, force a full sync or cancel jobs; OAuth sources get a "Connect with OAuth"
button. Cron schedules are validated with croniter (connectors.sync.schedules.validate_cron).
"""
from __future__ import annotations

import logging
import re

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from airweave.collections.models import Entity, SourceConnection, Sync, SyncJob
from airweave.crypto import InvalidToken, decrypt_json
from connectors.base import BaseSource, ConfigField
from connectors.registry import all_sources, get_source
from connectors.services import SourceConnectionError, source_connection_create, source_connection_update
from connectors.sync.schedules import validate_cron
from connectors.sync.services import SyncAlreadyRunning, sync_job_cancel, sync_job_start

logger = logging.getLogger(__name__)
CONFIG_PREFIX = "config__"
AUTH_PREFIX = "auth__"
OAUTH_CALLBACK_PATH = "/source-connections/callback"
_FIELD_IN_MESSAGE = re.compile(r"field '([^']+)'")


# --- the form generated from a source's declaration ---------------------------------------------

def declared_form_field(field: ConfigField, *, secret_is_set: bool = False) -> forms.Field:
    """A Django form field for one declared config or auth field.

    string → text (password input for secrets), integer, number, boolean, enum → choice,
    array → one value per line. Secrets are never rendered back; `secret_is_set` says one is
    stored, so leaving the field empty keeps it.
    """
    help_text = field.description or ""
    required = field.required and not field.type == "boolean"
    if field.is_secret:
        required = field.required and not secret_is_set
        if secret_is_set:
            help_text = (help_text + " " if help_text else "") + "A value is stored; leave empty to keep it."
    common = {"label": field.title or field.name, "help_text": help_text, "required": required}
    if field.enum_values:
        choices = [("", "---------")] + [(v, v) for v in field.enum_values]
        return forms.ChoiceField(choices=choices, initial=field.default, **common)
    if field.type == "integer":
        return forms.IntegerField(initial=field.default, **common)
    if field.type == "number":
        return forms.FloatField(initial=field.default, **common)
    if field.type == "boolean":
        return forms.BooleanField(initial=bool(field.default), **common)
    if field.type == "array":
        common["help_text"] = (help_text + " " if help_text else "") + "One value per line."
        initial = "\n".join(str(v) for v in field.default or [])
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), initial=initial, **common)
    if field.is_secret:
        return forms.CharField(widget=forms.PasswordInput(render_value=False), strip=False, **common)
    return forms.CharField(initial=field.default, **common)


def _to_value(field: ConfigField, raw):
    """A cleaned form value → the declared type; None when left empty."""
    if raw is None or raw == "":
        return None
    if field.type == "array":
        items = [line.strip() for line in str(raw).splitlines() if line.strip()]
        if field.items_type == "integer":
            try:
                return [int(item) for item in items]
            except ValueError:
                raise ValidationError(f"'{field.name}' takes whole numbers, one per line") from None
        return items
    return raw


def _to_initial(field: ConfigField, value):
    if field.type == "array" and isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return value


class SourceConnectionForm(forms.ModelForm):
    """Base of the generated forms; `source_cls` is set by source_connection_form()."""

    source_cls: type[BaseSource] | None = None
    cron_schedule = forms.CharField(
        required=False, label="Cron schedule",
        help_text="Five fields, e.g. '0 */6 * * *' (every six hours); empty: no schedule.")

    class Meta:
        model = SourceConnection
        fields = ["collection", "name", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        instance = self.instance
        self.stored_credentials = {}
        if instance.pk:
            try:
                self.stored_credentials = decrypt_json(instance.encrypted_credentials)
            except InvalidToken:  # keys rotated away: the operator re-enters the secrets
                self.stored_credentials = {}
            sync = getattr(instance, "sync", None)
            self.initial.setdefault("cron_schedule", sync.cron_schedule if sync else "")
        if self.source_cls is None:
            return
        for field in self.source_cls.config_fields:
            name = CONFIG_PREFIX + field.name
            if instance.pk and field.name in (instance.config or {}):
                self.initial.setdefault(name, _to_initial(field, instance.config[field.name]))
        for field in self.source_cls.auth_fields:
            name = AUTH_PREFIX + field.name
            if field.is_secret and self.stored_credentials.get(field.name):
                self.fields[name] = declared_form_field(field, secret_is_set=True)
            if not field.is_secret and field.name in self.stored_credentials:
                self.initial.setdefault(name, _to_initial(field, self.stored_credentials[field.name]))

    def clean_cron_schedule(self) -> str:
        try:
            return validate_cron(self.cleaned_data.get("cron_schedule") or "")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None

    def clean(self):
        cleaned = super().clean()
        self.config = self.credentials = None
        if self.source_cls is None:
            return cleaned
        config = self._collect(self.source_cls.config_fields, CONFIG_PREFIX)
        if config is not None:
            try:
                self.config = self.source_cls.validate_config(config, for_api=False)
            except ValueError as exc:
                self._declaration_error(exc, CONFIG_PREFIX)
        credentials = self._collect(self.source_cls.auth_fields, AUTH_PREFIX, keep=self.stored_credentials)
        if credentials is not None and self.source_cls.auth_fields:
            try:
                self.credentials = self.source_cls.validate_auth(credentials)
            except ValueError as exc:
                self._declaration_error(exc, AUTH_PREFIX)
        return cleaned

    def _collect(self, fields: tuple[ConfigField, ...], prefix: str, keep: dict | None = None) -> dict | None:
        """The declared fields' values from the form (None when one of them failed its own checks)."""
        out = {}
        for field in fields:
            name = prefix + field.name
            if name in self.errors:
                return None
            try:
                value = _to_value(field, self.cleaned_data.get(name))
            except ValidationError as exc:
                self.add_error(name, exc)
                return None
            if value is None and field.is_secret and keep and keep.get(field.name):
                value = keep[field.name]  # write-only: an empty secret keeps the stored one
            if value is not None:
                out[field.name] = value
        return out

    def _declaration_error(self, exc: ValueError, prefix: str) -> None:
        match = _FIELD_IN_MESSAGE.search(str(exc))
        name = prefix + match.group(1) if match else None
        self.add_error(name if name in self.fields else None, str(exc))


def source_connection_form(source_cls: type[BaseSource] | None) -> type[SourceConnectionForm]:
    """A form class with one field per config and auth field of `source_cls` (each instance
    re-creates its secret fields, since whether a secret is stored depends on the connection)."""
    attrs = {"source_cls": source_cls, "__module__": __name__}
    for field in (source_cls.config_fields if source_cls else ()):
        attrs[CONFIG_PREFIX + field.name] = declared_form_field(field)
    for field in (source_cls.auth_fields if source_cls else ()):
        attrs[AUTH_PREFIX + field.name] = declared_form_field(field)
    name = f"{source_cls.__name__ if source_cls else 'Unknown'}ConnectionForm"
    return type(name, (SourceConnectionForm,), attrs)


def _source_of(short_name: str | None) -> type[BaseSource] | None:
    try:
        return get_source(short_name) if short_name else None
    except KeyError:
        return None


# --- source connections -----------------------------------------------------------------------

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
        return _source_of(obj.short_name if obj is not None else request.GET.get("source"))

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
        if obj is None or "oauth_browser" not in getattr(_source_of(obj.short_name), "auth_methods", ()):
            return "-"
        return "authenticated" if obj.is_authenticated else "not authenticated yet"

    def add_view(self, request, form_url="", extra_context=None):
        if _source_of(request.GET.get("source")) is None:
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
        source_cls = _source_of(obj.short_name) if obj else None
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
        started, busy = 0, []
        for connection in queryset.select_related("sync"):
            try:
                sync_job_start(source_connection=connection, force_full_sync=force_full_sync)
                started += 1
            except SyncAlreadyRunning:
                busy.append(connection.name)
        if started:
            kind = "full sync" if force_full_sync else "sync"
            self.message_user(request, f"Started a {kind} of {started} connection(s).", messages.SUCCESS)
        if busy:
            self.message_user(request, f"Already syncing, not started: {', '.join(busy)}.", messages.WARNING)

    @admin.action(description="Cancel the running sync of the selected connections", permissions=["change"])
    def cancel_active_jobs(self, request, queryset):
        jobs = SyncJob.objects.filter(source_connection__in=queryset, status__in=SyncJob.ACTIVE_STATUSES)
        _cancel(self, request, jobs)

    # the OAuth button
    def get_urls(self):
        urls = [path("<path:object_id>/oauth/", self.admin_site.admin_view(self.oauth_start),
                     name="collections_sourceconnection_oauth")]
        return urls + super().get_urls()

    def oauth_start(self, request, object_id):
        """Starts the browser OAuth flow of a connection: redirects to the provider's consent page.

        Calls connectors.authorization.start_authorization(connection, redirect_uri) -> auth URL; when
        that module is not installed, or the source needs settings it lacks, says so and goes back.
        """
        connection = self.get_object(request, object_id)
        if connection is None:
            return HttpResponseRedirect(reverse("admin:collections_sourceconnection_changelist"))
        if not self.has_change_permission(request, connection):
            raise PermissionDenied
        back = HttpResponseRedirect(reverse("admin:collections_sourceconnection_change", args=[connection.pk]))
        if "oauth_browser" not in getattr(_source_of(connection.short_name), "auth_methods", ()):
            self.message_user(request, f"{connection.short_name} does not authenticate with OAuth.", messages.ERROR)
            return back
        try:
            from connectors.authorization import start_authorization
        except ImportError:
            self.message_user(request, "OAuth is not configured on this server (connectors.authorization is not "
                                       "installed); authenticate this connection with credentials instead.",
                              messages.ERROR)
            return back
        try:
            url = start_authorization(connection, request.build_absolute_uri(OAUTH_CALLBACK_PATH))
        except Exception as exc:  # e.g. no client id configured for this source: say so, do not crash the page
            logger.warning("OAuth start failed for source connection %s", connection.pk, exc_info=True)
            self.message_user(request, f"OAuth cannot start: {exc}", messages.ERROR)
            return back
        return HttpResponseRedirect(url)


# --- syncs and jobs ---------------------------------------------------------------------------

class SyncForm(forms.ModelForm):
    class Meta:
        model = Sync
        fields = ["cron_schedule", "continuous", "cursor_field"]

    def clean_cron_schedule(self) -> str:
        try:
            return validate_cron(self.cleaned_data.get("cron_schedule") or "")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


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


def _cancel(model_admin, request, jobs) -> None:
    cancelled, done = 0, 0
    for job in jobs:
        if job.status in SyncJob.ACTIVE_STATUSES:
            sync_job_cancel(job=job)
            cancelled += 1
        else:
            done += 1
    if cancelled:
        model_admin.message_user(request, f"Asked {cancelled} job(s) to stop; a running job stops at its next batch.",
                                 messages.SUCCESS)
    if done:
        model_admin.message_user(request, f"{done} job(s) had already finished.", messages.WARNING)
    if not cancelled and not done:
        model_admin.message_user(request, "No running job to cancel.", messages.INFO)


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
        _cancel(self, request, queryset)
