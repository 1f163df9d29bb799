"""monday.com: boards and their items, with each item's column values and updates.

Config: `board_ids` (default: every active board the token sees). Auth: a personal API token
(direct) or OAuth (monday tokens do not expire: `access_only`); both go as the bare
`Authorization` header monday asks for, with `API-Version: 2024-10`.

API (GraphQL, `POST https://api.monday.com/v2`): `boards(limit: 25, page: N, state: active)`
until a short page, then per board `items_page(limit: 100) { cursor items {...} }` followed by
`next_items_page(cursor:)` until the cursor is null; each item carries its `group`,
`column_values` and `updates` (its comments, indexed inside the item's entity). monday offers
no change feed for items (items_page cursors are pagination cursors that expire after 60
minutes), so every run is a full listing: unchanged items are kept by their content hash
without re-indexing, and absent items and boards are deleted.

Errors: GraphQL answers 200 with `errors`; an authentication error becomes AuthFailure, any
other a SourceError; the complexity budget answers 429 with `Retry-After` and is waited out.
Entities: MondayBoardEntity (`board:{id}`; breadcrumb: workspace), MondayItemEntity
(`item:{id}`; breadcrumbs: workspace, board, group).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import AuthFailure, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.registry import source
from connectors.sources._saas import compact, html_text, items, parse_time

API_VERSION = "2024-10"
BOARD_PAGE = 25
ITEM_PAGE = 100
ITEM_FIELDS = """id name created_at updated_at url state group { id title } creator { name }
column_values { id text type column { title } }
updates(limit: 100) { id body text_body created_at creator { name } }"""
BOARDS_QUERY = """query ($page: Int!, $limit: Int!) { boards(limit: $limit, page: $page, state: active) {
id name description url updated_at state workspace { id name } } }"""
FIRST_ITEMS_QUERY = """query ($board: [ID!], $limit: Int!) { boards(ids: $board) { items_page(limit: $limit) {
cursor items { %s } } } }""" % ITEM_FIELDS
NEXT_ITEMS_QUERY = """query ($cursor: String!, $limit: Int!) { next_items_page(limit: $limit, cursor: $cursor) {
cursor items { %s } } }""" % ITEM_FIELDS
_AUTH_CODES = {"UNAUTHENTICATED", "UserUnauthorizedException", "Unauthorized"}


@dataclass
class MondayUpdate:
    """An update (a comment) on an item."""

    author: str
    created_at: str
    text: str


@dataclass
class MondayBoardEntity(BaseEntity):
    """A board."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# Board: {self.name}\n\n{self.description}".strip()


@dataclass
class MondayItemEntity(BaseEntity):
    """An item (a row of a board) with its column values and updates."""

    board: str = ""
    group: str = ""
    columns: dict = field(default_factory=dict)
    updates: list[MondayUpdate] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = [("Board", self.board), ("Group", self.group)] + list(self.columns.items())
        head = f"# Item: {self.name}\n\n" + "\n".join(f"{k}: {v}" for k, v in facts if v)
        parts = [head] + [f"## {u.author}, {u.created_at}\n\n{u.text}" for u in self.updates]
        return "\n\n".join(parts).strip()


@source(
    name="monday.com",
    short_name="monday",
    description="Boards and items of monday.com, with the items' column values and updates.",
    auth_methods=("direct", "oauth_browser", "oauth_token", "oauth_byoc"),
    oauth_type="access_only",
    auth_fields=(ConfigField("api_token", "API token", "string",
                             "Your avatar → Developers → My access tokens.", required=True, is_secret=True),),
    config_fields=(ConfigField("board_ids", "Boards", "array", "Ids of the boards to index (default: all active).",
                               items_type="string"),),
    labels=("Project Management",),
    entity_types=(MondayBoardEntity, MondayItemEntity),
    rate_limit_level="connection",
    rate_limit="1000/minute",
    base_url="https://api.monday.com",
)
class MondaySource(BaseSource):
    """Lists boards and items through GraphQL; see the module docstring."""

    def http_auth(self):
        token = self.credentials.get("api_token") or self.credentials.get("access_token")
        return HeaderAuth({"Authorization": token}) if token else super().http_auth()

    def http_headers(self) -> dict:
        return {"API-Version": API_VERSION}

    def graphql(self, query: str, variables: dict) -> dict:
        """The `data` of a GraphQL answer. Raises AuthFailure or SourceError on its `errors`."""
        body = self.http.post("/v2", json={"query": query, "variables": variables}, idempotent=True).json()
        errors = body.get("errors") or ([{"message": body["error_message"], "extensions": {"code": body.get("error_code")}}]
                                        if body.get("error_message") else [])
        if errors:
            codes = {(e.get("extensions") or {}).get("code") for e in errors}
            message = "; ".join(e.get("message") or "" for e in errors)
            if codes & _AUTH_CODES:
                raise AuthFailure(f"monday.com refused the token: {message}", "invalid_credentials")
            raise SourceError(f"monday.com answered an error: {message}", "source_error")
        return body.get("data") or {}

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        wanted = set(self.config.get("board_ids") or [])

        def boards_page(page):
            page = page or 1
            boards = self.graphql(BOARDS_QUERY, {"page": page, "limit": BOARD_PAGE}).get("boards") or []
            return boards, page + 1 if len(boards) >= BOARD_PAGE else None

        for board in items(boards_page):
            if wanted and str(board["id"]) not in wanted:
                continue
            workspace = board.get("workspace") or {"id": "main", "name": "Main workspace"}
            ws = Breadcrumb(f"workspace:{workspace.get('id') or 'main'}", workspace.get("name") or "Main workspace",
                            "MondayWorkspace")
            yield MondayBoardEntity(
                entity_id=f"board:{board['id']}", name=board.get("name") or board["id"], breadcrumbs=[ws],
                updated_at=parse_time(board.get("updated_at")), web_url=board.get("url") or "",
                description=board.get("description") or "",
                raw_source_fields=compact({"board_id": board["id"], "workspace": workspace.get("name")}))
            crumbs = [ws, Breadcrumb(f"board:{board['id']}", board.get("name") or board["id"], "MondayBoardEntity")]
            for item in self._items(board["id"]):
                yield self._item(item, board, crumbs)

    def _items(self, board_id: str) -> Iterator[dict]:
        def fetch(cursor):
            if cursor is None:
                boards = self.graphql(FIRST_ITEMS_QUERY, {"board": [board_id], "limit": ITEM_PAGE}).get("boards") or [{}]
                page = boards[0].get("items_page") or {}
            else:
                page = self.graphql(NEXT_ITEMS_QUERY, {"cursor": cursor, "limit": ITEM_PAGE}).get("next_items_page") or {}
            return page.get("items") or [], page.get("cursor")

        return items(fetch)

    def _item(self, item: dict, board: dict, crumbs: list[Breadcrumb]) -> MondayItemEntity:
        group = item.get("group") or {}
        breadcrumbs = list(crumbs)
        if group.get("id"):
            breadcrumbs.append(Breadcrumb(f"group:{board['id']}:{group['id']}", group.get("title") or group["id"],
                                          "MondayGroup"))
        columns = {((c.get("column") or {}).get("title") or c.get("id")): c.get("text")
                   for c in item.get("column_values") or [] if c.get("text")}
        updates = [MondayUpdate(author=(u.get("creator") or {}).get("name") or "someone",
                                created_at=u.get("created_at") or "",
                                text=u.get("text_body") or html_text(u.get("body")))
                   for u in sorted(item.get("updates") or [], key=lambda u: u.get("created_at") or "")]
        return MondayItemEntity(
            entity_id=f"item:{item['id']}", name=item.get("name") or item["id"], breadcrumbs=breadcrumbs,
            created_at=parse_time(item.get("created_at")), updated_at=parse_time(item.get("updated_at")),
            web_url=item.get("url") or "", board=board.get("name") or "", group=group.get("title") or "",
            columns=columns, updates=[u for u in updates if u.text],
            raw_source_fields=compact({"item_id": item["id"], "board_id": board["id"], "group": group.get("title"),
                                       "state": item.get("state"),
                                       **{f"column_{c['id']}": c.get("text") for c in item.get("column_values") or []
                                          if c.get("text") and c.get("type") in ("status", "people", "date", "numbers")}}))
