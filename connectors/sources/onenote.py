"""OneNote: the pages of the signed-in user's notebooks, as HTML read by the HTML converter.

API (Microsoft Graph v1.0): `GET /me/onenote/sections` with `$expand=parentNotebook` (every
section of every notebook, `@odata.nextLink` pages), then per section
`GET /me/onenote/sections/{id}/pages` (`$select` of the page's metadata, `$top=100`, next links).
Microsoft advises listing pages per section: the user-wide `/me/onenote/pages` fails once an
account has many sections. A page's content, `GET /me/onenote/pages/{id}/content`, is HTML; it is
downloaded only when the page must be indexed, hashed by the page's `lastModifiedDateTime`, so an
unchanged page costs one row of its section's listing and no download.

OneNote has no delta query: every run lists the metadata of every page (cheap), and the pages it
no longer lists are deleted (a full listing). Config `notebooks` limits the sync to notebooks by
name (default: all). Breadcrumbs: notebook → section (→ section group, when the section is in one).

Entities: OneNotePageEntity (`entity_id` = the page id; `web_url` = `links.oneNoteWebUrl.href`).
No cursor is needed; none is kept.
"""
from __future__ import annotations

from typing import Iterator

from connectors.base import BaseEntity, Breadcrumb, ConfigField
from connectors.registry import source
from connectors.sources._msgraph import (GRAPH_RATE_LIMIT, MICROSOFT_AUTH_METHODS, MICROSOFT_OAUTH_TYPE,
                                         GraphFileEntity, GraphSource, download_fetcher, graph_time, pages)

PAGE_FIELDS = "id,title,createdDateTime,lastModifiedDateTime,level,order,links,contentUrl,createdByAppId"


class OneNotePageEntity(GraphFileEntity):
    """A OneNote page; its content is the page's HTML."""


@source(
    name="OneNote",
    short_name="onenote",
    description="Pages of your OneNote notebooks (text, lists and tables of each page), with notebooks and "
                "sections as breadcrumbs; changed pages re-read by their modification time.",
    auth_methods=MICROSOFT_AUTH_METHODS,
    oauth_type=MICROSOFT_OAUTH_TYPE,
    config_fields=(ConfigField("notebooks", "Notebooks", "array",
                               "Only these notebooks, by name (default: every notebook).", items_type="string"),),
    labels=("Knowledge Base",),
    entity_types=(OneNotePageEntity,),
    rate_limit_level="connection",
    rate_limit=GRAPH_RATE_LIMIT,
)
class OneNoteSource(GraphSource):
    """See the module docstring."""

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        wanted = {name.casefold() for name in self.config.get("notebooks") or []}
        sections = pages(self.http, "/me/onenote/sections", params={
            "$select": "id,displayName,self", "$expand": "parentNotebook($select=id,displayName),"
                                                         "parentSectionGroup($select=id,displayName)"})
        for section in sections:
            notebook = section.get("parentNotebook") or {}
            if wanted and (notebook.get("displayName") or "").casefold() not in wanted:
                continue
            crumbs = [Breadcrumb(notebook.get("id", ""), notebook.get("displayName") or "Notebook", "OneNoteNotebook")]
            group = section.get("parentSectionGroup")
            if group:
                crumbs.append(Breadcrumb(group["id"], group.get("displayName") or "", "OneNoteSectionGroup"))
            crumbs.append(Breadcrumb(section["id"], section.get("displayName") or "", "OneNoteSection"))
            for page in pages(self.http, f"/me/onenote/sections/{section['id']}/pages",
                              params={"$select": PAGE_FIELDS, "$top": 100}):
                yield self._page(page, crumbs, notebook.get("displayName") or "")

    def _page(self, page: dict, crumbs: list[Breadcrumb], notebook: str) -> OneNotePageEntity:
        links = page.get("links") or {}
        title = page.get("title") or "Untitled page"
        return OneNotePageEntity(
            entity_id=page["id"], name=title, breadcrumbs=crumbs,
            created_at=graph_time(page.get("createdDateTime")), updated_at=graph_time(page.get("lastModifiedDateTime")),
            web_url=(links.get("oneNoteWebUrl") or {}).get("href") or "",
            content_tag=page.get("lastModifiedDateTime") or "", mime_type="text/html",
            fetch=download_fetcher(self.http, f"/me/onenote/pages/{page['id']}/content", "page.html"),
            raw_source_fields={"notebook": notebook, "section": crumbs[-1].name, "level": page.get("level"),
                               "order": page.get("order"),
                               "client_url": (links.get("oneNoteClientUrl") or {}).get("href")},
        )
