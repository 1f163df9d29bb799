"""Trello: boards, and the cards of their lists with each card's comments.

Config: `board_ids` (default: every open board of the member). Auth: an API key and a token
(direct; sent as Trello's `Authorization: OAuth oauth_consumer_key=..., oauth_token=...`
header) or OAuth 1.0a (the browser flow through the `trello` provider entry: `oauth1`).

API (`https://api.trello.com/1`): `GET /members/me/boards?filter=open`, `GET /boards/{id}/lists`
(names for breadcrumbs). A first run lists `GET /boards/{id}/cards?filter=open` and the board's
comments, `GET /boards/{id}/actions?filter=commentCard&limit=1000`, paged backwards with
`before=<oldest action id>`. Later runs read the board's actions `since` the newest action
seen, fetch only the cards those actions touched (`GET /cards/{id}?actions=commentCard`), and
list the board's open card ids (`fields=id`, one request); with the open boards they are the
run's `present_entity_ids()`, so archived, deleted and moved cards, and boards no longer open
with their cards, are deleted. Comments live in their card's entity (a comment moves its card's activity).

Budget: 100 requests per 10 seconds per token. Entities: TrelloBoardEntity (`board:{id}`),
TrelloCardEntity (`card:{id}`; breadcrumbs: board, list). Cursor: `{"since": {board id:
"<newest action date>"}}`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from connectors.auth.tokens import HeaderAuth
from connectors.base import BaseEntity, BaseSource, Breadcrumb, ConfigField
from connectors.http import HttpError
from connectors.notifications.vendors import TrelloNotifications
from connectors.registry import source
from connectors.sources._saas import Watermarks, WatermarkSource, compact, items, parse_time

PAGE = 1000  # Trello's largest page of actions
CARD_FIELDS = "name,desc,url,shortUrl,idList,idBoard,labels,due,dueComplete,dateLastActivity,closed,idMembers"
# Actions that change what a card's entity shows.
CARD_ACTIONS = ("createCard,updateCard,commentCard,updateComment,deleteComment,copyCard,moveCardToBoard,"
                "convertToCardFromCheckItem,addLabelToCard,removeLabelFromCard")


@dataclass
class TrelloComment:
    """A comment on a card (a commentCard action)."""

    author: str
    date: str
    text: str


@dataclass
class TrelloBoardEntity(BaseEntity):
    """A board."""

    description: str = ""

    def textual_representation(self) -> str:
        return f"# Board: {self.name}\n\n{self.description}".strip()


@dataclass
class TrelloCardEntity(BaseEntity):
    """A card with its comments."""

    board: str = ""
    list_name: str = ""
    labels: list[str] = field(default_factory=list)
    due: str = ""
    description: str = ""
    comments: list[TrelloComment] = field(default_factory=list)

    def textual_representation(self) -> str:
        facts = [("Board", self.board), ("List", self.list_name), ("Labels", ", ".join(self.labels)), ("Due", self.due)]
        head = f"# Card: {self.name}\n\n" + "\n".join(f"{k}: {v}" for k, v in facts if v)
        parts = [head, self.description] + [f"## {c.author}, {c.date}\n\n{c.text}" for c in self.comments]
        return "\n\n".join(p for p in parts if p).strip()


@source(
    name="Trello",
    short_name="trello",
    notifications=TrelloNotifications,
    description="Boards and cards of Trello, with the cards' comments.",
    auth_methods=("direct", "oauth_browser", "oauth_byoc"),
    oauth_type="oauth1",
    auth_fields=(
        ConfigField("api_key", "API key", "string", "The API key of your Trello Power-Up (trello.com/power-ups/admin).",
                    required=True),
        ConfigField("token", "Token", "string", "A token authorized for that key with read access.",
                    required=True, is_secret=True),
    ),
    config_fields=(ConfigField("board_ids", "Boards", "array", "Ids of the boards to index (default: all open boards).",
                               items_type="string"),),
    labels=("Project Management",),
    entity_types=(TrelloBoardEntity, TrelloCardEntity),
    rate_limit_level="connection",
    rate_limit="100/10seconds",
    base_url="https://api.trello.com/1",
)
class TrelloSource(WatermarkSource, BaseSource):
    """Lists boards, cards and comments; see the module docstring."""

    def http_auth(self):
        if self.credentials.get("api_key") and self.credentials.get("token"):
            return HeaderAuth({"Authorization": f'OAuth oauth_consumer_key="{self.credentials["api_key"]}", '
                                                f'oauth_token="{self.credentials["token"]}"'})
        return super().http_auth()

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        self._marks = Watermarks(cursor)
        # An incremental run collects what still exists (every open board and card) for the pipeline.
        self._present: set[str] | None = set() if self._marks.incremental else None
        wanted = set(self.config.get("board_ids") or [])
        boards = self.http.get_json("/members/me/boards",
                                    params={"filter": "open", "fields": "name,desc,url,dateLastActivity,idOrganization"})
        boards = [b for b in boards if not wanted or b["id"] in wanted]
        for board in boards:
            yield self._board(board)
            yield from self._cards(board)
        # Marks of boards no longer listed (closed, deleted, left out) are dropped with them.
        self._marks.marks = {k: v for k, v in self._marks.marks.items() if k in {b["id"] for b in boards}}

    def present_entity_ids(self):
        return self._present

    # --- requests ---------------------------------------------------------------------------

    def _actions(self, board_id: str, filter_: str, since: str | None) -> Iterator[dict]:
        """The board's actions of `filter_` (newest first), paged backwards by `before`."""
        def fetch(before):
            params = {"filter": filter_, "limit": PAGE}
            if since:
                params["since"] = since
            if before:
                params["before"] = before
            page = self.http.get_json(f"/boards/{board_id}/actions", params=params)
            return page, page[-1]["id"] if len(page) >= PAGE else None

        return items(fetch)

    def _cards(self, board: dict) -> Iterator[TrelloCardEntity]:
        board_id = board["id"]
        if self._present is not None:
            self._present.add(f"board:{board_id}")
        since = self._marks.since(board_id)
        lists = {x["id"]: x.get("name") or "" for x in
                 self.http.get_json(f"/boards/{board_id}/lists", params={"fields": "name", "filter": "all"})}
        if not since:
            comments: dict[str, list[dict]] = {}
            for action in self._actions(board_id, "commentCard", None):
                self._marks.advance(board_id, action.get("date"))
                comments.setdefault(((action.get("data") or {}).get("card") or {}).get("id"), []).append(action)
            cards = self.http.get_json(f"/boards/{board_id}/cards", params={"filter": "open", "fields": CARD_FIELDS})
            for card in cards:
                self._marks.advance(board_id, card.get("dateLastActivity"))
                yield self._card(card, board, lists, comments.get(card["id"], []))
            return
        touched = []
        for action in self._actions(board_id, CARD_ACTIONS, since):
            self._marks.advance(board_id, action.get("date"))
            card_id = ((action.get("data") or {}).get("card") or {}).get("id")
            if card_id and card_id not in touched:
                touched.append(card_id)
        open_ids = [c["id"] for c in self.http.get_json(f"/boards/{board_id}/cards",
                                                        params={"filter": "open", "fields": "id"})]
        for card_id in touched:
            if card_id not in open_ids:
                continue  # archived, deleted or moved away: absent from the present ids, so deleted
            try:
                card = self.http.get_json(f"/cards/{card_id}", params={"fields": CARD_FIELDS, "actions": "commentCard",
                                                                       "actions_limit": PAGE})
            except HttpError as exc:
                if exc.status == 404:
                    continue
                raise
            yield self._card(card, board, lists, card.get("actions") or [])
        self._present.update(f"card:{i}" for i in open_ids)

    # --- entities ---------------------------------------------------------------------------

    def _board(self, board: dict) -> TrelloBoardEntity:
        return TrelloBoardEntity(
            entity_id=f"board:{board['id']}", name=board.get("name") or board["id"],
            updated_at=parse_time(board.get("dateLastActivity")), web_url=board.get("url") or "",
            description=board.get("desc") or "",
            raw_source_fields=compact({"board_id": board["id"], "organization_id": board.get("idOrganization")}))

    def _card(self, card: dict, board: dict, lists: dict, actions: list[dict]) -> TrelloCardEntity:
        list_name = lists.get(card.get("idList"), "")
        labels = [label.get("name") or label.get("color") or "" for label in card.get("labels") or []]
        labels = [x for x in labels if x]
        breadcrumbs = [Breadcrumb(f"board:{board['id']}", board.get("name") or board["id"], "TrelloBoardEntity")]
        if card.get("idList"):
            breadcrumbs.append(Breadcrumb(f"list:{card['idList']}", list_name or card["idList"], "TrelloList"))
        comments = [TrelloComment(author=(a.get("memberCreator") or {}).get("fullName") or "someone",
                                  date=a.get("date") or "", text=(a.get("data") or {}).get("text") or "")
                    for a in sorted(actions, key=lambda a: a.get("date") or "")]
        return TrelloCardEntity(
            entity_id=f"card:{card['id']}", name=card.get("name") or card["id"], breadcrumbs=breadcrumbs,
            created_at=_created(card["id"]), updated_at=parse_time(card.get("dateLastActivity")),
            web_url=card.get("url") or card.get("shortUrl") or "", board=board.get("name") or "",
            list_name=list_name, labels=labels, due=card.get("due") or "", description=card.get("desc") or "",
            comments=[c for c in comments if c.text],
            raw_source_fields=compact({"card_id": card["id"], "board_id": board["id"], "list": list_name,
                                       "labels": labels, "due": card.get("due"),
                                       "due_complete": card.get("dueComplete") if card.get("due") else None,
                                       "member_ids": card.get("idMembers")}))


def _created(object_id: str):
    """Trello ids are MongoDB ObjectIds: their first 8 hex digits are the creation time (epoch seconds)."""
    try:
        return parse_time(int(object_id[:8], 16))
    except ValueError:
        return None
