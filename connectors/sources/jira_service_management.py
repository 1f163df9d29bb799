"""Jira Service Management: the requests of a site's service desk projects, with their comments.

Built on the Jira source (`jira.py`, `_atlassian.py`): the same site URL, the same three ways to
authenticate (email + API token, a personal access token, OAuth 2.0 3LO with the
`read:servicedesk-request` scope too), the same JQL listing, incremental `updated` cursor and
deletion check, restricted to service desk projects (`projectType = "service_desk"`; config
`projects` narrows it to some of them). What Service Management adds, read per changed request
from its own API, `GET /rest/servicedeskapi/request/{key}?expand=requestType`: the request type
(`raw_source_fields.request_type`), the customer-facing status, and the request's page on the
customer portal as `web_url` (the agent view stays in `url`). Comments carry Service
Management's `jsdPublic` flag as `raw_source_fields.public` (false for internal notes). An issue
that is not a customer request (404 from the Service Management API) keeps the agent view.
The service desk API answers 429 with Retry-After like the rest of Jira, which the shared
client waits out.

Access (`supports_access_control`), as the Jira source mirrors it: who may browse the service
desk project (its permission scheme's grants; agents usually through the "Service Desk Team"
role), issue security levels, and comments limited to a group or role. What Service Management
adds on top of Jira permissions, the customers' view of their own requests on the portal, is not
mirrored: customers who are not agents see none of the requests here (narrower, never wider).

Entities: JiraIssueEntity (the request; breadcrumb: the service desk project) and
JiraCommentEntity, as the Jira source names them.
"""
from __future__ import annotations

from typing import Iterator

from connectors.base import BaseEntity, ConfigField
from connectors.http import HttpError
from connectors.sources._atlassian import atlassian_source
from connectors.sources.jira import JIRA_MIRRORED_PERMISSIONS, JiraCommentEntity, JiraIssueEntity, JiraSource


@atlassian_source(
    name="Jira Service Management",
    short_name="jira_service_management",
    description="Requests of Jira Service Management service desks, with their public replies and internal notes.",
    scope_field=ConfigField("projects", "Service desk projects", "array", "Keys of the service desk projects, e.g. "
                            "ITH; empty for every service desk the account can browse.", items_type="string",
                            default=[]),
    mirrored_permissions=(*JIRA_MIRRORED_PERMISSIONS,
                          ("customers' portal access to their own requests and their organizations'", False)),
    labels=("IT Service Management", "Customer Support", "Ticketing"),
    entity_types=(JiraIssueEntity, JiraCommentEntity),
)
class JiraServiceManagementSource(JiraSource):
    """Jira's listing restricted to service desk projects, with Service Management's request view."""

    def scope_clauses(self) -> list[str]:
        return [*super().scope_clauses(), 'projectType = "service_desk"']

    def _issue(self, api: str, issue: dict) -> Iterator[BaseEntity]:
        for entity in super()._issue(api, issue):
            if isinstance(entity, JiraIssueEntity):
                self._add_request_view(api, entity)
            yield entity

    def _add_request_view(self, api: str, entity: JiraIssueEntity) -> None:
        try:
            request = self.http.get_json(f"{api}/rest/servicedeskapi/request/{entity.key}",
                                         params={"expand": "requestType"})
        except HttpError as exc:
            if exc.status == 404:  # an issue of the project that is not a customer request
                return
            raise
        entity.url, entity.web_url = entity.web_url, (request.get("_links") or {}).get("web") or entity.web_url
        entity.raw_source_fields = {
            **entity.raw_source_fields, "request_type": (request.get("requestType") or {}).get("name"),
            "customer_status": (request.get("currentStatus") or {}).get("status"),
            "service_desk_id": request.get("serviceDeskId")}
