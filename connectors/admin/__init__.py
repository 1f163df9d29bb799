"""The operator console for sources: source connections, their syncs and sync jobs.

A source connection's form is generated from its source's declaration (connectors.base): one
field per config field and per auth field, typed as declared; secrets are write-only (never
rendered; left empty, the stored value stays). Validation is the declaration's own
(`validate_config`, `validate_auth`) and saving goes through the same services as the REST API.
Actions start a sync, force a full sync or cancel jobs; OAuth sources get a "Connect with OAuth"
button. Cron schedules are validated with croniter (connectors.sync.schedules.validate_cron).

One module per concern: `forms` (generated from the declarations), `source_connections`,
`syncs` (syncs and jobs), `actions` (start and cancel syncs), `oauth` (the OAuth button).
"""
from connectors.admin import source_connections, syncs  # noqa: F401 (registers the ModelAdmins)
