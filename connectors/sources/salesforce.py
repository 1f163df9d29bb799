"""Salesforce: accounts, contacts, opportunities and cases of one org.

Config: `object_types` (default all four), `instance_url` (only needed when a token is injected:
the browser flow stores the `instance_url` of Salesforce's token response with the token).
Auth: OAuth 2 with a refresh token (`with_refresh`; Salesforce answers no `expires_in`, so the
access token is refreshed when a call answers 401 `INVALID_SESSION_ID`).

API (REST, v60.0): SOQL through `GET /services/data/v60.0/query?q=SELECT ... ORDER BY
SystemModstamp`, paged by the answer's `nextRecordsUrl` until `done`. A first run is a full
listing. Later runs add `WHERE SystemModstamp >= <mark>` and ask
`GET /services/data/v60.0/sobjects/{type}/deleted/?start=&end=` for the records deleted since
the mark (Salesforce keeps that log 30 days: a cursor older than 29 days makes the run a full
listing again). Budget: API calls count against the org's daily allocation; the limit here
keeps one connection polite (20 requests a second).

Access (`supports_access_control`), as far as the REST API exposes record sharing. The sharing
tables are read once per sync by `generate_access_memberships` (which the pipeline calls before
the entities; records listed without it stay closed):
- the org-wide defaults (`SELECT Default<Object>Access FROM Organization`): `Read`, `Edit` (and
  wider) open an object's records to the organization; `ControlledByParent` (contacts) gives a
  contact its account's viewers;
- otherwise a record is visible to its owner (a user, or a queue as `group:<id>`), to each
  `UserOrGroupId` of its share object (`AccountShare`, `OpportunityShare`, `CaseShare`,
  `ContactShare`: manual shares, sharing rules, teams) and to the users allowed to view all data
  (`PermissionSetAssignment` of a permission set with `PermissionsViewAllData`, `group:view_all`);
- groups are listed with their members at each sync: public groups and queues
  (`GroupMember`: users and nested groups), role groups (`Group.Type` `Role`: the users of the
  role) and role-and-subordinates groups (the role's users, and the group of each child role,
  nested, from `UserRole.ParentRoleId`); users by their `Email`, active users only.
Not mirrored: access through the role hierarchy upwards (managers above an owner), territories,
and a sharing change on a record that did not change since the last run (the next full listing
applies it).

Entities: SalesforceAccountEntity, SalesforceContactEntity, SalesforceOpportunityEntity,
SalesforceCaseEntity; `entity_id` is the 18-character record Id (unique across an org's
objects); breadcrumbs: the record's account; `web_url` the Lightning record page. Cursor:
`{"since": {type: "<newest SystemModstamp seen>"}}`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import ClassVar, Iterator
from urllib.parse import urlsplit

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import ObjectTypesSource, Watermarks, compact, items, parse_time

API_VERSION = "v60.0"
DELETED_LOG_DAYS = 29  # Salesforce keeps deleted-record ids 30 days; one day of margin


@dataclass
class SalesforceEntity(BaseEntity):
    """A record; `fields` holds the queried fields (relationship fields flattened to `Account.Name`)."""

    object_type: str = ""
    fields: dict | None = None

    def _lines(self, *labels: tuple[str, str]) -> str:
        f = self.fields or {}
        return "\n".join(f"{label}: {f[key]}" for label, key in labels if f.get(key) not in (None, ""))

    def textual_representation(self) -> str:
        f = self.fields or {}
        kind = self.object_type
        head = f"# {kind}: {self.name}\n\n{self._lines(*self.LABELS)}"
        return f"{head}\n\n{f.get('Description') or ''}".strip()

    LABELS: ClassVar[tuple[tuple[str, str], ...]] = ()


@dataclass
class SalesforceAccountEntity(SalesforceEntity):
    """An account (a company)."""

    LABELS = (("Type", "Type"), ("Industry", "Industry"), ("Website", "Website"), ("Phone", "Phone"),
              ("City", "BillingCity"), ("Country", "BillingCountry"))


@dataclass
class SalesforceContactEntity(SalesforceEntity):
    """A contact (a person at an account)."""

    LABELS = (("Account", "Account.Name"), ("Title", "Title"), ("Department", "Department"), ("Email", "Email"),
              ("Phone", "Phone"))


@dataclass
class SalesforceOpportunityEntity(SalesforceEntity):
    """An opportunity (a deal)."""

    LABELS = (("Account", "Account.Name"), ("Stage", "StageName"), ("Amount", "Amount"), ("Close date", "CloseDate"),
              ("Probability (%)", "Probability"), ("Type", "Type"), ("Lead source", "LeadSource"))


@dataclass
class SalesforceCaseEntity(SalesforceEntity):
    """A support case."""

    LABELS = (("Case number", "CaseNumber"), ("Account", "Account.Name"), ("Contact", "Contact.Name"),
              ("Status", "Status"), ("Priority", "Priority"), ("Origin", "Origin"), ("Type", "Type"),
              ("Reason", "Reason"))


_COMMON = ("Id", "OwnerId", "CreatedDate", "LastModifiedDate", "SystemModstamp")
# type → (entity class, fields, name field, metadata fields for raw_source_fields)
OBJECT_TYPES: dict[str, tuple[type[SalesforceEntity], tuple[str, ...], str, tuple[str, ...]]] = {
    "Account": (SalesforceAccountEntity, _COMMON + ("Name", "Type", "Industry", "Website", "Phone", "BillingCity",
                                                    "BillingCountry", "Description"),
                "Name", ("Type", "Industry", "BillingCountry")),
    "Contact": (SalesforceContactEntity, _COMMON + ("Name", "FirstName", "LastName", "Email", "Title", "Phone",
                                                    "Department", "AccountId", "Account.Name", "Description"),
                "Name", ("Email", "Title", "AccountId")),
    "Opportunity": (SalesforceOpportunityEntity, _COMMON + ("Name", "StageName", "Amount", "CloseDate", "Probability",
                                                            "IsClosed", "IsWon", "Type", "LeadSource", "AccountId",
                                                            "Account.Name", "Description"),
                    "Name", ("StageName", "Amount", "CloseDate", "IsClosed", "IsWon", "AccountId")),
    "Case": (SalesforceCaseEntity, _COMMON + ("CaseNumber", "Subject", "Description", "Status", "Priority", "Origin",
                                              "Type", "Reason", "IsClosed", "AccountId", "Account.Name", "ContactId",
                                              "Contact.Name"),
             "Subject", ("CaseNumber", "Status", "Priority", "Origin", "IsClosed", "AccountId", "ContactId")),
}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _soql_time(value: datetime) -> str:
    """A SOQL dateTime literal (UTC, whole seconds): 2024-05-01T10:00:00Z."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@source(
    name="Salesforce",
    short_name="salesforce",
    description="Accounts, contacts, opportunities and cases of a Salesforce org.",
    auth_methods=("oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="with_refresh",
    config_fields=(
        ConfigField("object_types", "Object types", "array",
                    f"Salesforce objects to index, any of: {', '.join(OBJECT_TYPES)} (default: all).",
                    items_type="string", default=list(OBJECT_TYPES)),
        ConfigField("instance_url", "Instance URL", "string",
                    "Your org's URL, e.g. https://acme.my.salesforce.com. Only needed with an injected token; "
                    "the browser flow takes it from Salesforce's answer."),
    ),
    labels=("CRM",),
    entity_types=tuple(spec[0] for spec in OBJECT_TYPES.values()),
    supports_access_control=True,
    mirrored_permissions=(("org-wide defaults (public read / private / controlled by parent)", True),
                          ("record owner (user or queue)", True),
                          ("share objects: manual shares, sharing rules, teams", True),
                          ("public groups, queues, roles and roles with subordinates", True),
                          ("View All Data permission", True),
                          ("role hierarchy upwards (managers above the owner)", False),
                          ("territories", False)),
    rate_limit_level="connection",
    rate_limit="20/second",
)
class SalesforceSource(ObjectTypesSource, BaseSource):
    """Lists Salesforce records with SOQL; see the module docstring."""

    OBJECT_TYPES = OBJECT_TYPES

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        if out.get("instance_url"):
            parts = urlsplit(out["instance_url"].strip())
            if parts.scheme != "https" or not parts.hostname or parts.path not in ("", "/"):
                raise ValueError("config field 'instance_url' must be an https URL without a path, "
                                 "e.g. https://acme.my.salesforce.com")
            out["instance_url"] = f"https://{parts.netloc}"
        return out

    @property
    def base_url(self) -> str:
        url = self.credentials.get("instance_url") or self.config.get("instance_url")
        if not url:
            raise SourceError("Salesforce needs the org's instance URL: authenticate through the browser flow or "
                              "set config field 'instance_url'", "config_error")
        return url.rstrip("/")

    # --- access ----------------------------------------------------------------------------

    def _records(self, soql: str, what: str) -> list[dict]:
        def fetch(next_url):
            try:
                body = (self.http.get_json(next_url) if next_url else
                        self.http.get_json(f"/services/data/{API_VERSION}/query", params={"q": soql}))
            except HttpError as exc:
                raise _salesforce_error(exc, what) from None
            return body.get("records") or [], None if body.get("done", True) else body.get("nextRecordsUrl")

        return list(items(fetch))

    def generate_access_memberships(self) -> list[AccessMembership]:
        """Groups, queues and roles with their members, and `view_all`; reads the sharing tables (see the module)."""
        types = list(self.config.get("object_types") or list(OBJECT_TYPES))
        if "Contact" in types and "Account" not in types:
            types.append("Account")  # a contact controlled by its parent takes its account's viewers
        [org] = self._records("SELECT " + ", ".join(f"Default{t}Access" for t in types) + " FROM Organization",
                              "Organization") or [{}]
        self._defaults = {t: org.get(f"Default{t}Access") or "None" for t in types}
        users = self._records("SELECT Id, Email, UserRoleId FROM User WHERE IsActive = true", "User")
        self._emails = {u["Id"]: u["Email"].lower() for u in users if u.get("Email")}
        self._shares: dict[str, set[str]] = {}
        for t in types:
            if self._defaults[t] not in ("None", "Private"):
                continue
            for share in self._records(f"SELECT {t}Id, UserOrGroupId FROM {t}Share", f"{t}Share"):
                principal = self._principal(share.get("UserOrGroupId"))
                if principal:
                    self._shares.setdefault(share[f"{t}Id"], set()).add(principal)
        memberships = []
        for member in self._records("SELECT GroupId, UserOrGroupId FROM GroupMember", "GroupMember"):
            principal = self._principal(member.get("UserOrGroupId"))
            if principal:
                memberships.append(AccessMembership(member["GroupId"], principal))
        by_role: dict[str, list[str]] = {}
        for u in users:
            if u.get("UserRoleId") and u["Id"] in self._emails:
                by_role.setdefault(u["UserRoleId"], []).append(f"user:{self._emails[u['Id']]}")
        children: dict[str, list[str]] = {}
        for role in self._records("SELECT Id, ParentRoleId FROM UserRole", "UserRole"):
            if role.get("ParentRoleId"):
                children.setdefault(role["ParentRoleId"], []).append(role["Id"])
        groups = self._records("SELECT Id, Type, RelatedId FROM Group", "Group")
        subordinates = {g["RelatedId"]: g["Id"] for g in groups if g.get("Type") == "RoleAndSubordinates"}
        for group in groups:
            kind, role = group.get("Type"), group.get("RelatedId")
            if kind in ("Role", "RoleAndSubordinates", "RoleAndSubordinatesInternal") and role:
                memberships += [AccessMembership(group["Id"], u) for u in by_role.get(role, [])]
            if kind in ("RoleAndSubordinates", "RoleAndSubordinatesInternal") and role:
                memberships += [AccessMembership(group["Id"], f"group:{subordinates[c]}")
                                for c in children.get(role, []) if c in subordinates]
        for assignment in self._records("SELECT AssigneeId FROM PermissionSetAssignment WHERE "
                                        "PermissionSet.PermissionsViewAllData = true", "PermissionSetAssignment"):
            principal = self._principal(assignment.get("AssigneeId"))
            if principal:
                memberships.append(AccessMembership("view_all", principal))
        return memberships

    def _principal(self, record_id: str | None) -> str | None:
        """`user:<email>` for a user id (005…), `group:<id>` for a group or queue (00G…), else None."""
        if not record_id:
            return None
        if record_id.startswith("00G"):
            return f"group:{record_id}"
        email = getattr(self, "_emails", {}).get(record_id)
        return f"user:{email}" if email else None

    def _access(self, object_type: str, values: dict) -> dict:
        defaults = getattr(self, "_defaults", None)
        if defaults is None:  # the sharing tables were not read (see the module docstring): closed
            return {"access_viewers": [], "access_is_public": False}
        default = defaults.get(object_type, "None")
        if default == "ControlledByParent":
            if not values.get("AccountId"):
                return {"access_viewers": ["group:view_all"], "access_is_public": False}
            return self._access("Account", {"Id": values["AccountId"], "OwnerId": None})
        if default not in ("None", "Private"):
            return {"access_viewers": [], "access_is_public": True}
        viewers = {"group:view_all", *self._shares.get(values.get("Id") or "", set())}
        owner = self._principal(values.get("OwnerId"))
        if owner:
            viewers.add(owner)
        return {"access_viewers": sorted(viewers), "access_is_public": False}

    # --- listing -----------------------------------------------------------------------------

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        now = _now()
        oldest = min((parse_time(v) for v in self._marks.previous.values()), default=None)
        if oldest is not None and oldest < now - timedelta(days=DELETED_LOG_DAYS):
            # The deleted-records log no longer reaches back that far: list everything again.
            self._marks.previous, self._marks.incremental = {}, False
        for object_type in self.config.get("object_types") or list(OBJECT_TYPES):
            since = self._marks.since(object_type)
            for record in self._query(object_type, parse_time(since) if since else None):
                self._marks.advance(object_type, record.get("SystemModstamp"))
                yield self._entity(object_type, record)
            if since:
                self._deleted(object_type, parse_time(since), now)

    def _query(self, object_type: str, since: datetime | None) -> Iterator[dict]:
        fields = OBJECT_TYPES[object_type][1]
        soql = f"SELECT {', '.join(fields)} FROM {object_type}"
        if since:
            soql += f" WHERE SystemModstamp >= {_soql_time(since)}"
        soql += " ORDER BY SystemModstamp ASC"

        def fetch(next_url):
            try:
                if next_url:
                    body = self.http.get_json(next_url)
                else:
                    body = self.http.get_json(f"/services/data/{API_VERSION}/query", params={"q": soql})
            except HttpError as exc:
                raise _salesforce_error(exc, object_type) from None
            return body.get("records") or [], None if body.get("done", True) else body.get("nextRecordsUrl")

        return items(fetch)

    def _deleted(self, object_type: str, since: datetime, now: datetime) -> None:
        body = self.http.get_json(f"/services/data/{API_VERSION}/sobjects/{object_type}/deleted/",
                                  params={"start": since.isoformat(timespec="seconds"),
                                          "end": now.isoformat(timespec="seconds")})
        for record in body.get("deletedRecords") or []:
            self._marks.delete(record["id"])

    def _entity(self, object_type: str, record: dict) -> SalesforceEntity:
        cls, fields, name_field, meta = OBJECT_TYPES[object_type]
        values = {name: _field(record, name) for name in fields}
        breadcrumbs = []
        if values.get("AccountId") and object_type != "Account":
            breadcrumbs.append(Breadcrumb(values["AccountId"], values.get("Account.Name") or values["AccountId"],
                                          "SalesforceAccountEntity"))
        name = values.get(name_field) or values.get("CaseNumber") or record["Id"]
        if object_type == "Case" and values.get("CaseNumber"):
            name = f"Case {values['CaseNumber']}: {values.get('Subject') or '(no subject)'}"
        return cls(entity_id=record["Id"], name=name, breadcrumbs=breadcrumbs,
                   created_at=parse_time(values.get("CreatedDate")),
                   updated_at=parse_time(values.get("LastModifiedDate")),
                   web_url=f"{self.base_url}/lightning/r/{object_type}/{record['Id']}/view",
                   url=self.base_url + ((record.get("attributes") or {}).get("url") or ""),
                   object_type=object_type, fields={k: v for k, v in values.items() if k != "SystemModstamp"},
                   raw_source_fields=compact({"object_type": object_type, "owner_id": values.get("OwnerId"),
                                              **{_snake(k): values.get(k) for k in meta}}),
                   **self._access(object_type, values))


def _field(record: dict, name: str):
    """A field of a SOQL record; `Account.Name` reads the nested relationship object (None when absent)."""
    value = record
    for part in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _salesforce_error(exc: HttpError, object_type: str) -> Exception:
    """Salesforce's `[{"message", "errorCode"}]` answers as errors the user can act on."""
    body = exc.body or ""
    if exc.status == 400 and ("INVALID_TYPE" in body or "INVALID_FIELD" in body):
        return SourceError(f"Salesforce cannot query {object_type} for this user (it is not enabled in the org, or "
                           f"a field is hidden by field-level security); remove it from object_types or grant "
                           f"access: {' '.join(body[:200].split())}", "config_error")
    if exc.status == 403 and "API_DISABLED_FOR_ORG" in body:
        return SourceError("Salesforce says the REST API is disabled for this org (it needs Enterprise edition "
                           "or the API Enabled permission)", "config_error")
    if exc.status == 403 and "REQUEST_LIMIT_EXCEEDED" in body:
        return SourceError(f"Salesforce says the org's API request limit is exceeded; the next scheduled sync "
                           f"will try again: {' '.join(body[:200].split())}", "rate_limited")
    return exc
