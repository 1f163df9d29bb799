"""Coda: the pages (as Markdown) and the table rows of Coda docs.

Config: `docs` (doc ids, the `dAbCdEfGhIj` after `_d` in a doc's URL; default every doc the
token can read), `include_tables` (default true). Auth: an API token (Account settings → API
settings), sent as `Authorization: Bearer <token>`; a refused token (401) marks the connection
`needs_reauth`.

API (v1, `https://coda.io/apis/v1`): `GET /docs` or `GET /docs/{docId}`; `GET /docs/{docId}/pages`,
`GET /docs/{docId}/tables?tableTypes=table`, `GET /docs/{docId}/tables/{tableId}/rows?useColumnNames=true
&valueFormat=simple`, every listing paged by `limit` and `pageToken` (answered as `nextPageToken`).
A page's content is exported asynchronously: `POST /docs/{docId}/pages/{pageId}/export`
`{"outputFormat": "markdown"}` answers a request id, `GET .../export/{requestId}` is polled until
`status` is `complete` and its `downloadLink` (a pre-signed URL of another host, fetched without
the token) holds the Markdown. Coda allows 100 reads per 6 seconds per user and answers 429, which
the shared client waits out.

Entities: CodaPageEntity (`page:{docId}/{pageId}`; breadcrumbs doc → parent pages; `web_url` its
`browserLink`); CodaRowEntity (`row:{docId}/{tableId}/{rowId}`: the row's name and every column as
`Column: value`; breadcrumbs doc → table). Only canvas pages are exported (embeds and sync pages
have no content of their own); a failed export is a skipped entity with Coda's reason.

Incremental: cursor `{"since": {<docId>: <newest page updatedAt>}}`. Every run lists the docs, pages,
tables and rows (rows are small and come whole with their values; unchanged ones are kept by their
hash), and exports only the pages updated after their doc's mark. What the listings no longer
hold is deleted (`present_entity_ids`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import BearerAuth, NoAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField, UnreadableEntity
from connectors.registry import source
from connectors.sources._saas import ListedSource, Watermarks, items, parse_time

PAGE = 100
EXPORT_POLLS = 30  # polls of an export, one second apart (Coda renders most pages in a few seconds)


@dataclass
class CodaPageEntity(BaseEntity):
    """A canvas page: its name, subtitle and Markdown content."""

    subtitle: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        return "\n\n".join(p for p in (f"# {self.name}", self.subtitle, self.text) if p)


@dataclass
class CodaRowEntity(BaseEntity):
    """A table row: its display name and `Column: value` lines."""

    table: str = ""
    values: list[str] = field(default_factory=list)

    def textual_representation(self) -> str:
        return "\n".join([f"# {self.name}", f"Row of {self.table}", *self.values])


@source(
    name="Coda",
    short_name="coda",
    description="Pages (as Markdown) and table rows of Coda docs.",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_token", "API token", "string", "Account settings → API settings → Generate API "
                             "token.", required=True, is_secret=True),),
    config_fields=(
        ConfigField("docs", "Docs", "array", "Doc ids (default: every doc the token can read).", items_type="string",
                    default=[]),
        ConfigField("include_tables", "Include tables", "boolean", "Index the rows of the docs' tables.",
                    default=True),
    ),
    labels=("Knowledge Base", "Productivity"),
    entity_types=(CodaPageEntity, CodaRowEntity),
    rate_limit_level="connection",
    rate_limit="100/6seconds",
    base_url="https://coda.io/apis/v1",
)
class CodaSource(ListedSource, BaseSource):
    """Lists docs, pages, tables and rows; exports changed pages; see the module docstring."""

    def http_auth(self):
        return BearerAuth(self.credentials["api_token"])

    def _list(self, path: str, **params) -> Iterator[dict]:
        def fetch(token):
            body = self.http.get_json(path, params={**params, "limit": PAGE, **({"pageToken": token} if token else {})})
            return body.get("items") or [], body.get("nextPageToken")

        return items(fetch)

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks, self._present = Watermarks(cursor), set()
        chosen = self.config.get("docs") or []
        docs = [self.http.get_json(f"/docs/{d}") for d in chosen] if chosen else self._list("/docs")
        for doc in docs:
            crumb = Breadcrumb(f"doc:{doc['id']}", doc.get("name") or doc["id"], "CodaDoc")
            yield from self._pages(doc, crumb)
            if self.config.get("include_tables", True):
                yield from self._rows(doc, crumb)

    def _pages(self, doc: dict, crumb: Breadcrumb) -> Iterator[BaseEntity]:
        since = self._marks.since(doc["id"])
        pages = {p["id"]: p for p in self._list(f"/docs/{doc['id']}/pages")}
        for page in pages.values():
            if page.get("contentType", "canvas") != "canvas":
                continue
            entity_id = self.present(f"page:{doc['id']}/{page['id']}")
            self._marks.advance(doc["id"], page.get("updatedAt"))
            if since and (page.get("updatedAt") or "") <= since:
                continue
            parents, parent = [], (page.get("parent") or {}).get("id")
            while parent in pages and len(parents) < 50:
                parents.insert(0, Breadcrumb(f"page:{doc['id']}/{parent}", pages[parent]["name"], "CodaPageEntity"))
                parent = (pages[parent].get("parent") or {}).get("id")
            text, failure = self._export(doc["id"], page["id"])
            if failure:
                yield UnreadableEntity(entity_id=entity_id, name=page.get("name") or page["id"], reason=failure)
                continue
            yield CodaPageEntity(
                entity_id=entity_id, name=page.get("name") or page["id"], subtitle=page.get("subtitle") or "",
                text=text, breadcrumbs=[crumb, *parents], web_url=page.get("browserLink") or "",
                created_at=parse_time(page.get("createdAt")), updated_at=parse_time(page.get("updatedAt")),
                raw_source_fields={"doc": crumb.name, "author": (page.get("createdBy") or {}).get("name")})

    def _export(self, doc_id: str, page_id: str) -> tuple[str, str | None]:
        """The page's Markdown and None, or "" and the reason it could not be exported."""
        path = f"/docs/{doc_id}/pages/{page_id}/export"
        request = self.http.post(path, json={"outputFormat": "markdown"}).json()
        for _ in range(EXPORT_POLLS):
            status = self.http.get_json(f"{path}/{request['id']}")
            if status.get("status") == "complete":
                return self.http.get(status["downloadLink"], auth=NoAuth()).text.strip(), None
            if status.get("status") == "failed":
                return "", f"Coda could not export the page: {status.get('error') or 'failed'}"
            self.http.sleep(1)
        return "", f"Coda's export of the page did not complete within {EXPORT_POLLS} polls"

    def _rows(self, doc: dict, crumb: Breadcrumb) -> Iterator[BaseEntity]:
        for table in self._list(f"/docs/{doc['id']}/tables", tableTypes="table"):
            table_crumb = Breadcrumb(f"table:{doc['id']}/{table['id']}", table.get("name") or table["id"], "CodaTable")
            for row in self._list(f"/docs/{doc['id']}/tables/{table['id']}/rows", useColumnNames="true",
                                  valueFormat="simple"):
                values = {k: v for k, v in (row.get("values") or {}).items() if v not in (None, "", [])}
                yield CodaRowEntity(
                    entity_id=self.present(f"row:{doc['id']}/{table['id']}/{row['id']}"),
                    name=row.get("name") or row["id"], table=table_crumb.name,
                    values=[f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in values.items()],
                    breadcrumbs=[crumb, table_crumb], web_url=row.get("browserLink") or "",
                    created_at=parse_time(row.get("createdAt")), updated_at=parse_time(row.get("updatedAt")),
                    raw_source_fields={"doc": crumb.name, "table": table_crumb.name, "index": row.get("index")})
