"""Forms of the web UI. They parse and check the shape of input; the services decide what is valid
(their errors, which name a field, are attached to that field by `attach_error`)."""
from __future__ import annotations

from django import forms
from django.conf import settings

from airweave.providers.catalog import embedding_models


def embedding_model_choices() -> list[tuple[str, str]]:
    """The embedding models of defaults.yml, as (name, label) with their dimension."""
    return [(m.name, f"{m.name} ({m.dimensions} dimensions)") for m in embedding_models().values()]


class CollectionCreateForm(forms.Form):
    """A new collection: name, readable id (suggested from the name in the browser; empty: made by
    the service as the API does), embedding model pinned at creation."""

    name = forms.CharField(max_length=200, help_text="4 to 64 characters.")
    readable_id = forms.CharField(max_length=200, required=False, label="Readable id",
                                  help_text="Lowercase letters and digits separated by single hyphens; "
                                            "empty: made from the name.")
    embedding_model_name = forms.ChoiceField(label="Embedding model", choices=embedding_model_choices,
                                             help_text="Pinned: every chunk of the collection uses this model.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["embedding_model_name"].initial = settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL


class ScheduleForm(forms.Form):
    """A connection's cron schedule (five fields; empty: no schedule)."""

    cron = forms.CharField(max_length=100, required=False, label="Cron schedule",
                           help_text="Five fields, e.g. 0 */6 * * * (UTC). Empty: manual only.")


class QuickStartKeyForm(forms.Form):
    """The dashboard's quick start: a key bound to the user, named, 90 days."""

    name = forms.CharField(max_length=200, required=False, initial="quick start", label="Key name")


def attach_error(form: forms.Form, field: str | None, message: str) -> None:
    """Show a service's error at the form field it names (a dotted path such as
    `authentication.credentials.token` is matched by its last part), else at the form's top."""
    if field:
        for candidate in (field, field.rsplit(".", 1)[-1]):
            if candidate in form.fields:
                form.add_error(candidate, message)
                return
    form.add_error(None, message)


AUTH_METHOD_LABELS = {
    "direct": "Credentials",
    "oauth_browser": "Sign in with the provider (OAuth in the browser)",
    "oauth_byoc": "Sign in with your own OAuth app (client id and secret)",
    "oauth_token": "An access token you already have",
}


def _declared_field(declared, *, secret_placeholder: bool = False) -> forms.Field:
    """A form field for a source's declared ConfigField (connectors.base.ConfigField)."""
    common = {"label": declared.title, "required": declared.required, "help_text": declared.description or ""}
    if declared.enum_values:
        choices = [("", "—")] if not declared.required else []
        return forms.ChoiceField(choices=choices + [(v, v) for v in declared.enum_values],
                                 initial=declared.default, **common)
    if declared.type == "boolean":
        return forms.BooleanField(initial=bool(declared.default), **{**common, "required": False})
    if declared.type == "integer":
        return forms.IntegerField(initial=declared.default, **common)
    if declared.type == "number":
        return forms.FloatField(initial=declared.default, **common)
    if declared.type == "array":
        initial = "\n".join(map(str, declared.default)) if isinstance(declared.default, (list, tuple)) else None
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), initial=initial,
                               **{**common, "help_text": (common["help_text"] + " One per line.").strip()})
    widget = forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}) if declared.is_secret else None
    return forms.CharField(widget=widget, initial=None if declared.is_secret else declared.default, **common)


class SourceConnectionForm(forms.Form):
    """The form of one source, generated from its declaration: a name, the auth method, the
    declared auth fields (`cred_<name>`, secrets write-only), an access token, an own OAuth client,
    the declared config fields (`config_<name>`) and a cron schedule."""

    def __init__(self, source_cls, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.source_cls = source_cls
        methods = list(source_cls.auth_methods)
        self.fields["name"] = forms.CharField(max_length=200, required=False, label="Connection name",
                                              initial=f"{source_cls.name}")
        self.fields["auth_method"] = forms.ChoiceField(
            label="How to authenticate", choices=[(m, AUTH_METHOD_LABELS.get(m, m)) for m in methods],
            initial=methods[0], widget=forms.RadioSelect)
        for declared in source_cls.auth_fields:
            field = _declared_field(declared)
            field.required = False  # required only for the "credentials" method: the service says so at its field
            self.fields[f"cred_{declared.name}"] = field
        if "oauth_token" in methods:
            self.fields["access_token"] = forms.CharField(required=False, label="Access token",
                                                          widget=forms.PasswordInput(render_value=False))
            self.fields["refresh_token"] = forms.CharField(required=False, label="Refresh token (optional)",
                                                           widget=forms.PasswordInput(render_value=False))
        if "oauth_byoc" in methods:
            self.fields["client_id"] = forms.CharField(required=False, label="OAuth client id")
            self.fields["client_secret"] = forms.CharField(required=False, label="OAuth client secret",
                                                           widget=forms.PasswordInput(render_value=False))
        for declared in source_cls.config_fields:
            self.fields[f"config_{declared.name}"] = _declared_field(declared)
        self.fields["cron"] = forms.CharField(max_length=100, required=False, label="Cron schedule (optional)",
                                              help_text="Five fields, e.g. 0 */6 * * * (UTC). Empty: manual only.")

    def field_groups(self) -> dict[str, list]:
        """Bound fields by section, for the template: auth (per method), config, schedule."""
        groups = {"credentials": [], "token": [], "byoc": [], "config": []}
        for bound in self:
            if bound.name.startswith("cred_"):
                groups["credentials"].append(bound)
            elif bound.name in ("access_token", "refresh_token"):
                groups["token"].append(bound)
            elif bound.name in ("client_id", "client_secret"):
                groups["byoc"].append(bound)
            elif bound.name.startswith("config_"):
                groups["config"].append(bound)
        return groups

    def config(self) -> dict:
        """The declared config from the cleaned data (arrays split by lines; empty values left out)."""
        out = {}
        for declared in self.source_cls.config_fields:
            value = self.cleaned_data.get(f"config_{declared.name}")
            if declared.type == "array" and isinstance(value, str):
                value = [line.strip() for line in value.replace(",", "\n").splitlines() if line.strip()]
                if not value:
                    continue
            if value in (None, "") or (declared.type == "boolean" and value is False and declared.default is None):
                continue
            out[declared.name] = value
        return out

    def clean(self):
        data = super().clean()
        if data.get("auth_method") == "oauth_byoc" and not data.get("client_id"):
            self.add_error("client_id", "Your own OAuth app needs its client id (and usually its secret).")
        if data.get("auth_method") == "oauth_token" and not data.get("access_token"):
            self.add_error("access_token", "Paste the access token.")
        return data

    def authentication(self, redirect_uri: str) -> dict:
        """docs/api.md's `authentication` object for the chosen method."""
        method = self.cleaned_data["auth_method"]
        if method == "direct":
            return {"credentials": {d.name: self.cleaned_data.get(f"cred_{d.name}")
                                    for d in self.source_cls.auth_fields
                                    if self.cleaned_data.get(f"cred_{d.name}") not in (None, "")}}
        if method == "oauth_token":
            token = {"access_token": self.cleaned_data.get("access_token") or None}
            if self.cleaned_data.get("refresh_token"):
                token["refresh_token"] = self.cleaned_data["refresh_token"]
            return token
        browser = {"redirect_uri": redirect_uri}
        if method == "oauth_byoc":
            browser.update({k: self.cleaned_data[k] for k in ("client_id", "client_secret") if self.cleaned_data.get(k)})
        return browser


def attach_source_error(form: "SourceConnectionForm", field: str | None, message: str) -> None:
    """A SourceConnectionError at its field: `config` errors name the config field in their message
    ("config field 'path' is required"), `authentication.credentials.<name>` a credential."""
    import re

    if field == "config":
        named = re.search(r"field '([^']+)'", message) or re.search(r"^(\w+)[: ]", message)
        if named and f"config_{named.group(1)}" in form.fields:
            form.add_error(f"config_{named.group(1)}", message)
            return
        for declared in form.source_cls.config_fields:
            if re.search(rf"\b{re.escape(declared.name)}\b", message):
                form.add_error(f"config_{declared.name}", message)
                return
    if field and field.startswith("authentication.credentials."):
        name = f"cred_{field.rsplit('.', 1)[-1]}"
        if name in form.fields:
            form.add_error(name, message)
            return
    mapping = {"authentication.access_token": "access_token", "authentication.client_id": "client_id",
               "schedule.cron": "cron", "name": "name"}
    if field in mapping and mapping[field] in form.fields:
        form.add_error(mapping[field], message)
        return
    form.add_error(None, message)
