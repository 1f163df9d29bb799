"""Zoho CRM: the leads, contacts, accounts and deals of a Zoho CRM organization.

Config: `data_center` (`com`, `eu`, `in`, `com.au`, `jp`, `ca`, `sa`, `com.cn`: the API host is
`https://www.zohoapis.<data_center>`), `object_types` (`Leads`, `Contacts`, `Accounts`, `Deals`;
default all four). Auth: OAuth 2 (the browser flow, bring-your-own client, or an injected token;
scopes `ZohoCRM.modules.READ,ZohoCRM.users.READ`; refresh tokens with offline access), sent as
`Authorization: Zoho-oauthtoken <token>`, as Zoho asks. A refused token (401 `INVALID_TOKEN`) is
refreshed once, then marks the connection `needs_reauth`. The provider entry refreshes through
accounts.zoho.com; a deployment of another data center points `AIRWEAVE_OAUTH_PROVIDERS_FILE` at
its own accounts server.

API (v8): `GET /crm/v8/{module}?fields=...&per_page=200&sort_by=Modified_Time&sort_order=asc`,
paged by `page_token` (answered as `info.next_page_token` while `info.more_records`); an
incremental run sends `If-Modified-Since: <mark>` and Zoho answers only the records changed since
(204 or 304 when none). Deletions: `GET /crm/v8/{module}/deleted?type=all&page=N&per_page=200`
with the same header. `GET /crm/v8/users?type=CurrentUser` gives the `org_id` of record links.
Zoho answers 429 when the API credits are spent, which the shared client waits out.

Entities: ZohoRecordEntity (`{module}:{id}`: the record's name and its non-empty fields as
`Field: value` lines; breadcrumb: the module; `web_url`
`https://crm.zoho.<dc>/crm/org<org_id>/tab/<module>/<id>`).

Incremental: cursor `{"since": {<module>: <newest Modified_Time>}}`; deleted records (recycle bin
or permanently) are reported deleted; a first run or forced full sync is a full listing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import OAuth2Auth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._saas import ObjectTypesSource, Watermarks, compact, items, parse_time

PAGE = 200
DATA_CENTERS = ("com", "eu", "in", "com.au", "jp", "ca", "sa", "com.cn")
MODULES = {  # module -> (the field naming a record, the fields read)
    "Leads": ("Full_Name", "Full_Name,First_Name,Last_Name,Company,Email,Phone,Title,Lead_Status,Lead_Source,"
                           "Industry,Description,Owner,Created_Time,Modified_Time"),
    "Contacts": ("Full_Name", "Full_Name,First_Name,Last_Name,Email,Phone,Title,Department,Account_Name,Lead_Source,"
                              "Description,Owner,Created_Time,Modified_Time"),
    "Accounts": ("Account_Name", "Account_Name,Website,Phone,Industry,Account_Type,Billing_City,Billing_Country,"
                                 "Description,Owner,Created_Time,Modified_Time"),
    "Deals": ("Deal_Name", "Deal_Name,Stage,Amount,Closing_Date,Account_Name,Contact_Name,Probability,Type,Next_Step,"
                           "Description,Owner,Created_Time,Modified_Time"),
}


@dataclass
class ZohoRecordEntity(BaseEntity):
    """A CRM record: its module, name (`name`) and `Field: value` lines."""

    module: str = ""
    fields: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return "\n".join([f"# {self.name}", f"Zoho CRM {self.module.rstrip('s').lower()}", *self.fields])


@source(
    name="Zoho CRM",
    short_name="zoho_crm",
    description="Leads, contacts, accounts and deals of a Zoho CRM organization.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("data_center", "Data center", "string", "Where the organization lives (zohoapis.<this>).",
                    enum_values=DATA_CENTERS, default="com"),
        ConfigField("object_types", "Modules", "array", ", ".join(MODULES), items_type="string",
                    default=list(MODULES)),
    ),
    labels=("CRM", "Sales"),
    entity_types=(ZohoRecordEntity,),
    rate_limit_level="org",
    rate_limit="100/minute",
)
class ZohoCrmSource(ObjectTypesSource, BaseSource):
    """Lists each module by Modified_Time with If-Modified-Since; see the module docstring."""

    OBJECT_TYPES = MODULES

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        if out["data_center"] not in DATA_CENTERS:
            raise ValueError(f"config field 'data_center' takes one of {', '.join(DATA_CENTERS)}")
        return out

    @property
    def base_url(self) -> str:
        return f"https://www.zohoapis.{self.config.get('data_center', 'com')}"

    def http_auth(self):
        auth = super().http_auth()
        if isinstance(auth, OAuth2Auth):
            auth.scheme = "Zoho-oauthtoken"
        return auth

    def _get(self, path: str, since: str | None, params: dict) -> dict:
        """The JSON of a GET, `{}` when Zoho answers nothing changed (204 / 304)."""
        headers = {"If-Modified-Since": since} if since else {}
        response = self.http.get(path, params=params, headers=headers)
        return {} if response.status_code in (204, 304) or not response.content else response.json()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        users = self._get("/crm/v8/users", None, {"type": "CurrentUser"}).get("users") or [{}]
        self._org = users[0].get("org_id") or ""
        for module in self.config["object_types"]:
            since = self._marks.since(module)
            title_field, fields = MODULES[module]

            def fetch(token, module=module, since=since, fields=fields):
                params = {"fields": fields, "per_page": PAGE, "sort_by": "Modified_Time", "sort_order": "asc"}
                body = self._get(f"/crm/v8/{module}", since, {**params, **({"page_token": token} if token else {})})
                info = body.get("info") or {}
                return body.get("data") or [], info.get("next_page_token") if info.get("more_records") else None

            for record in items(fetch):
                self._marks.advance(module, record.get("Modified_Time"))
                yield self._record(module, title_field, record)
            if since:
                self._deleted(module, since)

    def _deleted(self, module: str, since: str) -> None:
        def fetch(page):
            body = self._get(f"/crm/v8/{module}/deleted", since, {"type": "all", "page": page or 1, "per_page": PAGE})
            return body.get("data") or [], (page or 1) + 1 if (body.get("info") or {}).get("more_records") else None

        for record in items(fetch):
            self._marks.delete(f"{module}:{record['id']}")

    def _record(self, module: str, title_field: str, r: dict) -> ZohoRecordEntity:
        values = compact({k: _text(v) for k, v in r.items() if k not in ("id", title_field) and not k.startswith("$")})
        dc = self.config.get("data_center", "com")
        return ZohoRecordEntity(
            entity_id=f"{module}:{r['id']}", name=_text(r.get(title_field)) or r["id"], module=module,
            fields=[f"{k.replace('_', ' ')}: {v}" for k, v in values.items() if k not in ("Created_Time",
                                                                                       "Modified_Time")],
            breadcrumbs=[Breadcrumb(f"module:{module}", module, "ZohoModule")],
            web_url=f"https://crm.zoho.{dc}/crm/org{self._org}/tab/{module}/{r['id']}",
            created_at=parse_time(r.get("Created_Time")), updated_at=parse_time(r.get("Modified_Time")),
            raw_source_fields={**{k: values[k] for k in ("Owner", "Stage", "Lead_Status", "Industry", "Account_Name")
                                  if k in values}, "module": module})


def _text(value) -> str:
    """A Zoho field value as text: lookups (`{"name", "id"}`) by their name, lists joined."""
    if isinstance(value, dict):
        return str(value.get("name") or value.get("id") or "")
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return "" if value is None else str(value)
