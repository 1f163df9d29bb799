"""The admin's forms: a source connection's form generated from its source's declaration, and a sync's.

One form field per config field and per auth field, typed as declared (connectors.base.ConfigField);
secrets are write-only (never rendered; left empty, the stored value stays). Validation is the
declaration's own (`validate_config`, `validate_auth`); cron schedules are validated with croniter
(connectors.sync.schedules.validate_cron).
"""
from __future__ import annotations

import re

from django import forms
from django.core.exceptions import ValidationError

from airweave.collections.models import SourceConnection, Sync
from airweave.crypto import InvalidToken, decrypt_json
from connectors.base import BaseSource, ConfigField
from connectors.registry import get_source
from connectors.sync.schedules import validate_cron

CONFIG_PREFIX = "config__"
AUTH_PREFIX = "auth__"
_FIELD_IN_MESSAGE = re.compile(r"field '([^']+)'")


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


def source_of(short_name: str | None) -> type[BaseSource] | None:
    """The registered source class of `short_name`, or None (empty, or not installed here)."""
    try:
        return get_source(short_name) if short_name else None
    except KeyError:
        return None


class SyncForm(forms.ModelForm):
    class Meta:
        model = Sync
        fields = ["cron_schedule", "continuous", "cursor_field"]

    def clean_cron_schedule(self) -> str:
        try:
            return validate_cron(self.cleaned_data.get("cron_schedule") or "")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
