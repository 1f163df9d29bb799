"""Source connection services: create, update and delete, validated against the source's declaration."""
from __future__ import annotations

from datetime import timezone as dt_timezone

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from airweave.collections.models import Collection, SourceConnection, Sync
from airweave.collections.selectors import source_connection_count
from airweave.collections.services import source_connection_event_payload
from airweave.crypto import encrypt_json
from airweave.events import publish_domain_event
from airweave.tenancy.models import Organization
from airweave.tenancy.quotas import SOURCE_CONNECTIONS, quota_ensure
from connectors.registry import get_source
from connectors.sync.schedules import sync_schedule_apply, validate_cron


class SourceConnectionError(ValueError):
    """Bad source connection input; `field` names what to fix."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def source_connection_create(*, collection: Collection, short_name: str, name: str | None = None,
                             description: str = "", config: dict | None = None, credentials: dict | None = None,
                             authentication: dict | None = None, cron_schedule: str = "",
                             sync_immediately: bool = True, created_by=None, for_api: bool = True,
                             callback_url: str | None = None, redirect_url: str | None = None) -> SourceConnection:
    """Create a connection (and its Sync) in `collection`'s organization; start a job if asked.

    `config` is validated against the source's declared config fields; `for_api` applies the
    API's stricter rules (e.g. local paths only under AIRWEAVE_LOCAL_ROOTS).
    `authentication` is docs/api.md's object, checked against the source's auth methods (`{}`: direct
    if the source has it, else the browser flow), one of:
    `{credentials}` (direct), `{access_token, refresh_token?, expires_at?}` (token injection; expires_at in
    epoch seconds or ISO-8601), `{redirect_uri?, client_id?, client_secret?, consumer_key?,
    consumer_secret?}` (the browser flow, with the connection's own OAuth client when given:
    the connection is created `pending_auth`, `auth_summary(connection)["auth_url"]` is the URL
    to open, and `sync_immediately` means "sync once authenticated"; `callback_url` overrides
    the OAuth redirect URI). `credentials` (operators: commands, admin) are stored as given.
    `credentials` given directly are also checked against the source's declared auth fields.
    `redirect_url` (the public API's top-level field) is where a browser flow returns when
    `authentication` names no `redirect_uri`; other flows ignore it. Raises SourceConnectionError naming the bad field, and QuotaExceeded when the organization
    has as many connections as its quota allows.
    """
    try:
        source_cls = get_source(short_name)
    except KeyError:
        raise SourceConnectionError(f"unknown source '{short_name}'; see GET /sources", "short_name") from None
    try:
        clean_config = source_cls.validate_config(config or {}, for_api=for_api)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "config") from None
    credentials = _valid_credentials(source_cls, credentials)
    cron_schedule = _valid_cron(cron_schedule)
    if authentication is not None:
        method, stored, browser, authenticated = _authentication_plan(source_cls, authentication)
    elif credentials:  # the operator's raw credentials (commands, admin, tests): stored as given
        method = "oauth_token" if credentials.get("access_token") else "direct"
        stored, browser, authenticated = credentials, None, True
    else:
        method, stored, browser, authenticated = _authentication_plan(source_cls, {"credentials": {}})
    with transaction.atomic():
        # Locking the organization's row serialises concurrent creations against the quota.
        organization = Organization.objects.select_for_update().get(pk=collection.organization_id)
        quota_ensure(organization, SOURCE_CONNECTIONS, source_connection_count(organization=organization))
        connection = SourceConnection.objects.create(
            organization_id=collection.organization_id, collection=collection,
            name=(name or f"{source_cls.name} connection")[:200], description=description or "",
            short_name=short_name, config=clean_config, encrypted_credentials=encrypt_json(stored),
            auth_method=method, created_by=created_by, modified_by=created_by,
            is_authenticated=authenticated, authenticated_at=timezone.now() if method == "oauth_token" else None,
            status=SourceConnection.Status.PENDING_SYNC if authenticated else SourceConnection.Status.PENDING_AUTH,
        )
        sync = Sync.objects.create(organization_id=collection.organization_id, source_connection=connection,
                                   cron_schedule=cron_schedule)
        sync_schedule_apply(sync)
        if browser is not None:
            from connectors.authorization import AuthorizationError, start_authorization

            try:
                start_authorization(connection, browser.get("redirect_uri") or redirect_url, callback_url=callback_url,
                                    sync_after=sync_immediately)
            except AuthorizationError as exc:
                raise SourceConnectionError(str(exc), "authentication") from None
            connection.refresh_from_db()
    publish_domain_event(connection.organization_id, "source_connection.created",
                         source_connection_event_payload(connection))
    if sync_immediately and authenticated:
        from connectors.sync.services import sync_job_start

        sync_job_start(source_connection=connection)
        connection.refresh_from_db()
    return connection


_BROWSER_FIELDS = {"redirect_uri", "client_id", "client_secret", "consumer_key", "consumer_secret"}
_TOKEN_FIELDS = {"access_token", "refresh_token", "expires_at"}
_OAUTH_METHODS = {"oauth_browser", "oauth_token", "oauth_byoc"}


def _authentication_plan(source_cls, authentication: dict) -> tuple[str, dict, dict | None, bool]:
    """(auth_method, credentials to store, the browser-flow fields or None, authenticated) for docs/api.md's
    `authentication`."""
    declared = set(source_cls.auth_methods)
    if not authentication:  # nothing said: the source's own default, direct if it has it, else the browser flow
        authentication = {"credentials": {}} if "direct" in declared else {}
    fields = set(authentication)
    if fields & {"provider_readable_id", "provider_config"}:
        raise SourceConnectionError("auth providers (Composio, Pipedream, ...) are not available on this server: "
                                    "authenticate with direct credentials, an OAuth token or the OAuth browser flow",
                                    "authentication.provider_readable_id")
    methods = ", ".join(source_cls.auth_methods)
    if "credentials" in fields:
        if fields != {"credentials"}:
            raise SourceConnectionError("authentication with credentials takes no other field", "authentication")
        credentials = authentication["credentials"] or {}
        if not isinstance(credentials, dict):
            raise SourceConnectionError("authentication.credentials must be an object", "authentication.credentials")
        if "direct" not in declared:
            if credentials:
                raise SourceConnectionError(f"source '{source_cls.short_name}' takes no direct credentials; its "
                                            f"auth methods: {methods}", "authentication")
            # No authentication yet (e.g. created in the admin): pending until an OAuth flow completes.
            return "oauth_browser", {}, None, False
        for f in source_cls.auth_fields:
            if f.required and credentials.get(f.name) in (None, ""):
                raise SourceConnectionError(f"authentication.credentials.{f.name} is required ({f.title})",
                                            f"authentication.credentials.{f.name}")
        return "direct", _valid_credentials(source_cls, credentials) or {}, None, True
    if "access_token" in fields:
        if fields - _TOKEN_FIELDS:
            raise SourceConnectionError(f"token injection takes only {', '.join(sorted(_TOKEN_FIELDS))}",
                                        "authentication")
        if not declared & _OAUTH_METHODS:
            raise SourceConnectionError(f"source '{source_cls.short_name}' takes no OAuth token; its auth methods: "
                                        f"{methods}", "authentication")
        token = {k: authentication[k] for k in _TOKEN_FIELDS if authentication.get(k) not in (None, "")}
        if not isinstance(token.get("access_token"), str):
            raise SourceConnectionError("authentication.access_token must be a non-empty string",
                                        "authentication.access_token")
        if "expires_at" in token:
            token["expires_at"] = _epoch_seconds(token["expires_at"])
        return "oauth_token", token, None, True
    if fields - _BROWSER_FIELDS:
        raise SourceConnectionError(f"unknown authentication field(s): {', '.join(sorted(fields - _BROWSER_FIELDS))}",
                                    "authentication")
    if not declared & {"oauth_browser", "oauth_byoc"}:
        raise SourceConnectionError(f"source '{source_cls.short_name}' has no browser authorization; its auth "
                                    f"methods: {methods}", "authentication")
    client = {k: authentication[k] for k in ("client_id", "client_secret", "consumer_key", "consumer_secret")
              if authentication.get(k)}
    if ("client_secret" in client and "client_id" not in client) or (
            "consumer_secret" in client and "consumer_key" not in client):
        raise SourceConnectionError("a client secret needs its client id (client_id / consumer_key)", "authentication")
    if source_cls.requires_byoc and not client:
        raise SourceConnectionError(f"source '{source_cls.short_name}' needs your own OAuth client: give client_id "
                                    f"and client_secret", "authentication.client_id")
    return ("oauth_byoc" if client else "oauth_browser"), client, authentication, False


def _epoch_seconds(value) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        parsed = parse_datetime(value.strip())
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt_timezone.utc)
            return parsed.timestamp()
        try:
            return float(value)
        except ValueError:
            pass
    raise SourceConnectionError("authentication.expires_at must be epoch seconds or an ISO-8601 date-time",
                                "authentication.expires_at")


def source_connection_reinitiate_oauth(*, source_connection: SourceConnection, redirect_url: str | None = None,
                                      callback_url: str | None = None) -> SourceConnection:
    """Start a fresh OAuth browser flow for a connection (a new `auth.auth_url`), e.g. when the
    last link expired or the token was revoked (`needs_reauth`). Keeps the connection's own OAuth
    client (bring-your-own-client) and the previous flow's redirect URL unless `redirect_url` is given.
    Raises SourceConnectionError when the connection does not authenticate through OAuth."""
    from connectors.authorization import AuthorizationError, pending_redirect_url, start_authorization

    if source_connection.auth_method not in ("oauth_browser", "oauth_byoc"):
        raise SourceConnectionError(f"this connection authenticates with {source_connection.auth_method}, not an OAuth "
                                    "browser flow: update its credentials instead", "auth_method")
    try:
        start_authorization(source_connection, redirect_url or pending_redirect_url(source_connection),
                            callback_url=callback_url, sync_after=True)
    except AuthorizationError as exc:
        raise SourceConnectionError(str(exc), "authentication") from None
    source_connection.refresh_from_db()
    return source_connection


def source_connection_delete(*, source_connection: SourceConnection) -> None:
    """Delete a connection with its sync, jobs, entities and chunks, and the vendor subscription
    the product made for its change notifications (best effort, see notification_unsubscribe)."""
    from connectors.notifications.services import notification_unsubscribe

    notification_unsubscribe(source_connection=source_connection)
    payload, organization_id = source_connection_event_payload(source_connection), source_connection.organization_id
    source_connection.delete()
    publish_domain_event(organization_id, "source_connection.deleted", payload)


def source_connection_update(*, source_connection: SourceConnection, name: str | None = None,
                             description: str | None = None, config: dict | None = None,
                             schedule: dict | None = None, credentials: dict | None = None, modified_by=None,
                             for_api: bool = True, authentication: dict | None = None) -> SourceConnection:
    """Rename, re-describe, re-configure, re-schedule or re-authenticate a connection.

    `credentials`, when given, replace the stored ones as a whole (validated against the
    source's auth fields, encrypted at rest). `authentication` is the API's object: only the
    direct shape `{credentials}` can replace credentials (as in the public Airweave API); any
    other shape raises SourceConnectionError, as does any other bad input.
    """
    if authentication:
        if set(authentication) != {"credentials"} or not isinstance(authentication["credentials"], dict):
            raise SourceConnectionError("only direct credentials can be updated: send authentication "
                                        "{\"credentials\": {...}}; re-run an OAuth flow by creating the "
                                        "connection again", "authentication")
        credentials = authentication["credentials"]
    if config is not None:
        try:
            source_connection.config = get_source(source_connection.short_name).validate_config(config, for_api=for_api)
        except ValueError as exc:
            raise SourceConnectionError(str(exc), "config") from None
    if credentials is not None:
        source_connection.encrypted_credentials = encrypt_json(
            _valid_credentials(get_source(source_connection.short_name), credentials))
    if name is not None:
        source_connection.name = name[:200]
    if description is not None:
        source_connection.description = description
    source_connection.modified_by = modified_by or source_connection.modified_by
    cron = _valid_cron(schedule.get("cron") or "") if schedule is not None else None
    with transaction.atomic():
        source_connection.save()
        if schedule is not None:
            sync = source_connection.sync
            sync.cron_schedule = cron
            sync.continuous = bool(schedule.get("continuous"))
            sync.cursor_field = schedule.get("cursor_field") or ""
            sync.save()
            sync_schedule_apply(sync)
    return source_connection


def _valid_credentials(source_cls, credentials: dict | None) -> dict | None:
    """`credentials` checked against the source's auth fields, when it declares any and they are given."""
    if not credentials or not source_cls.auth_fields:
        return credentials
    try:
        return source_cls.validate_auth(credentials)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "authentication.credentials") from None


def _valid_cron(expression: str) -> str:
    try:
        return validate_cron(expression)
    except ValueError as exc:
        raise SourceConnectionError(str(exc), "schedule.cron") from None


def source_connection_reauthenticate(*, source_connection: SourceConnection, credentials: dict,
                                     modified_by=None, sync: bool = True) -> SourceConnection:
    """Replace the credentials of a connection that needs re-authentication (direct credentials),
    mark it authenticated again and, with `sync`, start a job. Raises SourceConnectionError naming
    the credential field to fix (or SyncAlreadyRunning from the sync start)."""
    source_cls = get_source(source_connection.short_name)
    if "direct" not in source_cls.auth_methods:
        raise SourceConnectionError(f"source '{source_cls.short_name}' takes no direct credentials; "
                                    "authorize it in the browser", "authentication")
    for f in source_cls.auth_fields:
        if f.required and credentials.get(f.name) in (None, ""):
            raise SourceConnectionError(f"authentication.credentials.{f.name} is required ({f.title})",
                                        f"authentication.credentials.{f.name}")
    stored = _valid_credentials(source_cls, credentials) or {}
    SourceConnection.objects.filter(pk=source_connection.pk).update(
        encrypted_credentials=encrypt_json(stored), auth_method="direct", is_authenticated=True,
        status=SourceConnection.Status.PENDING_SYNC, error_category="", error_message="",
        modified_by=modified_by or source_connection.modified_by, modified_at=timezone.now())
    source_connection.refresh_from_db()
    if sync:
        from connectors.sync.services import sync_job_start

        sync_job_start(source_connection=source_connection)
        source_connection.refresh_from_db()
    return source_connection
