"""Azure DevOps: the work items and the wiki pages of Azure DevOps Services projects.

Config: `organization` (the `acme` of https://dev.azure.com/acme), `projects` (project names),
`include_wiki` (default true). Auth: a personal access token (scopes Work Items: Read and Wiki:
Read), sent as HTTP basic auth with an empty user name, as Azure DevOps documents, with
`X-TFS-FedAuthRedirect: Suppress` so a refused token answers 401 (not a sign-in page); a 401
marks the connection `needs_reauth`.

API (`https://dev.azure.com/{organization}/{project}/_apis/...`, `api-version=7.1`):
- work items: `POST wit/wiql?timePrecision=true` runs a WIQL query (`{"query": "SELECT [System.Id]
  FROM WorkItems WHERE [System.TeamProject] = @project ... ORDER BY [System.ChangedDate]"}`) and
  answers ids; `GET wit/workitems?ids=<up to 200>&fields=...&errorPolicy=Omit` reads them.
- wiki: `GET wiki/wikis`, `GET wiki/wikis/{id}/pages?path=/&recursionLevel=full` (the page tree),
  `GET wiki/wikis/{id}/pages/{pageId}?includeContent=true` (one page's Markdown).
Azure DevOps throttles by usage and answers 429 with Retry-After, which the shared client waits out.

Entities: AzureDevOpsWorkItemEntity (`workitem:{id}`: type, title, state, description and
acceptance criteria as text; breadcrumbs project → area path; `web_url` `.../_workitems/edit/<id>`),
AzureDevOpsWikiPageEntity (`wikipage:{wiki id}:{page id}`; breadcrumbs wiki → parent pages;
`web_url` its `remoteUrl`).

Incremental: cursor `{"since": {<project>: <newest System.ChangedDate>}}`. Every run asks WIQL for
every work item id (ids only, cheap) and reads only those changed after the mark (a second WIQL
query); every wiki page is read again (wikis answer no change dates) and kept by its hash. What
the listings no longer hold is deleted (`present_entity_ids`). WIQL answers at most 20,000 ids
per query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import quote

from connectors.auth.tokens import BasicAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.registry import source
from connectors.sources._saas import ListedSource, Watermarks, compact, html_text, parse_time

API = {"api-version": "7.1"}
BATCH = 200
FIELDS = ("System.Id,System.Title,System.WorkItemType,System.State,System.Description,System.AreaPath,"
          "System.IterationPath,System.AssignedTo,System.Tags,System.CreatedDate,System.ChangedDate,"
          "Microsoft.VSTS.Common.Priority,Microsoft.VSTS.Common.AcceptanceCriteria")
_ORG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,48}[A-Za-z0-9]?$")


@dataclass
class AzureDevOpsWorkItemEntity(BaseEntity):
    """A work item: its type and title (`name`), state and description."""

    details: str = ""
    description: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.details, self.description) if p)


@dataclass
class AzureDevOpsWikiPageEntity(BaseEntity):
    """A wiki page: its title (`name`, the last path segment) and Markdown."""

    text: str = ""

    def textual_representation(self) -> str:
        return f"# {self.name}\n\n{self.text}".strip()


@source(
    name="Azure DevOps",
    short_name="azure_devops",
    description="Work items and wiki pages of Azure DevOps Services projects.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("personal_access_token", "Personal access token", "string",
                             "User settings → Personal access tokens (Work Items: Read, Wiki: Read).", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("organization", "Organization", "string", "The `acme` of https://dev.azure.com/acme.",
                    required=True),
        ConfigField("projects", "Projects", "array", "Project names.", items_type="string", required=True),
        ConfigField("include_wiki", "Include wikis", "boolean", "Index the projects' wiki pages.", default=True),
    ),
    labels=("Project Management", "Code", "Knowledge Base"),
    entity_types=(AzureDevOpsWorkItemEntity, AzureDevOpsWikiPageEntity),
    rate_limit_level="connection",
    rate_limit="20/second",
)
class AzureDevOpsSource(ListedSource, BaseSource):
    """Reads work items by WIQL and wiki pages by their tree; see the module docstring."""

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        org = re.sub(r"^https?://dev\.azure\.com/", "", out["organization"].strip()).strip("/")
        if not _ORG.match(org):
            raise ValueError("config field 'organization' must be the organization's name, e.g. 'acme' for "
                             "https://dev.azure.com/acme")
        projects = [p.strip() for p in out["projects"] if isinstance(p, str) and p.strip()]
        if not projects:
            raise ValueError("config field 'projects' must name at least one project")
        out.update(organization=org, projects=list(dict.fromkeys(projects)))
        return out

    @property
    def base_url(self) -> str:
        return f"https://dev.azure.com/{self.config['organization']}"

    def http_auth(self):
        return BasicAuth("", self.credentials["personal_access_token"])

    def http_headers(self) -> dict:
        return {"X-TFS-FedAuthRedirect": "Suppress"}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        for project in self.config["projects"]:
            yield from self._work_items(project)
            if self.config.get("include_wiki", True):
                yield from self._wikis(project)

    def _wiql(self, project: str, since: str | None) -> list[int]:
        where = f" AND [System.ChangedDate] > '{since}'" if since else ""
        query = (f"SELECT [System.Id] FROM WorkItems WHERE [System.TeamProject] = @project{where} "
                 "ORDER BY [System.ChangedDate] ASC")
        body = self.http.post(f"/{quote(project)}/_apis/wit/wiql", params={**API, "timePrecision": "true"},
                              json={"query": query}, idempotent=True).json()
        return [w["id"] for w in body.get("workItems") or []]

    def _work_items(self, project: str) -> Iterator[BaseEntity]:
        since = self._marks.since(project)
        ids = self._wiql(project, None)
        for i in ids:
            self.present(f"workitem:{i}")
        changed = self._wiql(project, since) if since else ids
        for start in range(0, len(changed), BATCH):
            chunk = ",".join(str(i) for i in changed[start:start + BATCH])
            body = self.http.get_json(f"/{quote(project)}/_apis/wit/workitems",
                                      params={**API, "ids": chunk, "fields": FIELDS, "errorPolicy": "Omit"})
            for item in body.get("value") or []:
                if item:  # errorPolicy=Omit answers null for an item deleted since the query
                    yield self._work_item(project, item)

    def _work_item(self, project: str, item: dict) -> AzureDevOpsWorkItemEntity:
        f = item.get("fields") or {}
        self._marks.advance(project, f.get("System.ChangedDate"))
        area = [a for a in (f.get("System.AreaPath") or "").split("\\") if a]
        crumbs = [Breadcrumb(f"project:{project}", project, "AzureDevOpsProject")] + [
            Breadcrumb(f"area:{'/'.join(area[:n + 1])}", name, "AzureDevOpsArea") for n, name in enumerate(area[1:], 1)]
        meta = compact({"type": f.get("System.WorkItemType"), "state": f.get("System.State"),
                        "priority": f.get("Microsoft.VSTS.Common.Priority"),
                        "assigned_to": (f.get("System.AssignedTo") or {}).get("displayName"),
                        "iteration": f.get("System.IterationPath"), "tags": f.get("System.Tags")})
        criteria = html_text(f.get("Microsoft.VSTS.Common.AcceptanceCriteria"))
        return AzureDevOpsWorkItemEntity(
            entity_id=f"workitem:{item['id']}", name=f"{f.get('System.WorkItemType', 'Work item')} {item['id']}: "
                                                    f"{f.get('System.Title') or ''}".strip(),
            details="; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in meta.items()),
            description="\n\n".join(p for p in (html_text(f.get("System.Description")),
                                                f"Acceptance criteria: {criteria}" if criteria else "") if p),
            breadcrumbs=crumbs, web_url=f"{self.base_url}/{quote(project)}/_workitems/edit/{item['id']}",
            created_at=parse_time(f.get("System.CreatedDate")), updated_at=parse_time(f.get("System.ChangedDate")),
            raw_source_fields={**meta, "area": f.get("System.AreaPath"), "project": project})

    def _wikis(self, project: str) -> Iterator[BaseEntity]:
        for wiki in self.http.get_json(f"/{quote(project)}/_apis/wiki/wikis", params=API).get("value") or []:
            base = f"/{quote(project)}/_apis/wiki/wikis/{wiki['id']}/pages"
            root = self.http.get_json(base, params={**API, "path": "/", "recursionLevel": "full"})
            stack = [(root, [Breadcrumb(f"wiki:{wiki['id']}", wiki.get("name") or wiki["id"], "AzureDevOpsWiki")])]
            while stack:
                page, crumbs = stack.pop()
                name = (page.get("path") or "/").rstrip("/").rsplit("/", 1)[-1]
                if page.get("path") not in (None, "/"):
                    entity = self._wiki_page(base, wiki, page, name, crumbs)
                    if entity is not None:
                        yield entity
                    crumbs = crumbs + [Breadcrumb(f"wikipage:{wiki['id']}:{page['id']}", name,
                                                  "AzureDevOpsWikiPageEntity")]
                stack.extend((sub, crumbs) for sub in reversed(page.get("subPages") or []))

    def _wiki_page(self, base: str, wiki: dict, page: dict, name: str,
                   crumbs: list[Breadcrumb]) -> AzureDevOpsWikiPageEntity | None:
        entity_id = f"wikipage:{wiki['id']}:{page['id']}"
        try:
            full = self.http.get_json(f"{base}/{page['id']}", params={**API, "includeContent": "true"})
        except HttpError as exc:
            if exc.status == 404:  # deleted between the tree and this read
                return None
            raise
        self.present(entity_id)
        return AzureDevOpsWikiPageEntity(
            entity_id=entity_id, name=name, text=full.get("content") or "", breadcrumbs=crumbs,
            web_url=full.get("remoteUrl") or page.get("remoteUrl") or "",
            raw_source_fields={"wiki": wiki.get("name"), "path": page.get("path")})
