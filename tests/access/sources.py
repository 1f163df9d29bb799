"""Test-only sources, registered when this module is imported.

- `acl_wiki`: a wiki export (a JSON file) with per-page access lists and nested groups; declares
  `supports_access_control`, so pages without an access list are closed.
- `acl_directory`: a people directory searched at query time (`federated_search`), with
  per-entry access; authenticated through the browser OAuth flow.
- `test_tracker`: an issue tracker with one config field of every type and a username/password
  pair, used to check admin forms generated from a declaration.

The export and directory files are plain JSON written by the tests:
`{"groups": {"<group id>": ["user:<email>" | "group:<group id>", ...]},
  "pages": [{"id", "title", "body", "space"?, "viewers"?, "is_public"?}]}`
and `{"entries": [{"id", "name", "text", "viewers"?, "is_public"?}]}`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from connectors.base import AccessMembership, BaseEntity, BaseSource, Breadcrumb, ConfigField, SourceError
from connectors.registry import source


@dataclass
class WikiPageEntity(BaseEntity):
    body: str = ""

    def textual_representation(self) -> str:
        return self.body


def _read(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read export {path}: {exc}", category="config_error") from None


@source(
    name="ACL Wiki (test)",
    short_name="acl_wiki",
    description="A wiki export with page permissions and nested groups (test only).",
    auth_methods=("direct",),
    auth_fields=(ConfigField("api_token", "API token", "string", "Token of a wiki admin.", required=True,
                             is_secret=True),),
    config_fields=(
        ConfigField("export_path", "Export file", "string", "The JSON export to read.", required=True),
        ConfigField("space", "Space", "string", "Only pages of this space (default: all)."),
    ),
    labels=("Knowledge base",),
    entity_types=(WikiPageEntity,),
    supports_access_control=True,
)
class ACLWikiSource(BaseSource):
    def generate_access_memberships(self):
        data = _read(self.config["export_path"])
        if "groups" not in data:
            return None
        return [AccessMembership(group_id, member) for group_id, members in data["groups"].items()
                for member in members]

    def generate_entities(self, cursor: dict) -> Iterator[WikiPageEntity]:
        for page in _read(self.config["export_path"]).get("pages", []):
            if self.config.get("space") and page.get("space") != self.config["space"]:
                continue
            space = page.get("space", "General")
            yield WikiPageEntity(
                entity_id=page["id"], name=page["title"], body=page["body"],
                breadcrumbs=[Breadcrumb(f"space:{space}", space, "WikiSpace")],
                access_viewers=page.get("viewers", []), access_is_public=page.get("is_public"),
            )


@source(
    name="ACL Directory (test)",
    short_name="acl_directory",
    description="A people directory searched at query time (test only).",
    auth_methods=("oauth_browser",),
    oauth_type="with_refresh",
    config_fields=(ConfigField("entries_path", "Entries file", "string", "The directory's JSON file.",
                               required=True),),
    federated_search=True,
    supports_access_control=True,
)
class ACLDirectorySource(BaseSource):
    def generate_entities(self, cursor: dict):
        return iter(())

    def search(self, query: str, limit: int) -> list[dict]:
        words = {w.lower() for w in re.findall(r"\w+", query)}
        out = []
        for entry in _read(self.config["entries_path"]).get("entries", []):
            if words & {w.lower() for w in re.findall(r"\w+", entry["text"])}:
                result = {"entity_id": entry["id"], "name": entry["name"], "textual_representation": entry["text"],
                          "breadcrumbs": [], "system_metadata": {"source_name": "acl_directory"}, "web_url": ""}
                if "viewers" in entry or "is_public" in entry:
                    result["access"] = {"viewers": entry.get("viewers", []), "is_public": entry.get("is_public")}
                out.append(result)
        return out[:limit]


@source(
    name="Tracker (test)",
    short_name="test_tracker",
    description="An issue tracker (test only): one config field of every type.",
    auth_methods=("direct",),
    auth_fields=(
        ConfigField("username", "Username", "string", required=True),
        ConfigField("password", "Password", "string", required=True, is_secret=True),
    ),
    config_fields=(
        ConfigField("base_url", "Base URL", "string", "Where the tracker lives.", required=True),
        ConfigField("max_issues", "Max issues", "integer", "Stop after this many issues.", default=500),
        ConfigField("include_closed", "Include closed issues", "boolean", default=False),
        ConfigField("projects", "Projects", "array", "Project keys to sync.", items_type="string"),
        ConfigField("min_score", "Minimum score", "number"),
        ConfigField("state", "State", "string", enum_values=("open", "all")),
    ),
)
class TrackerSource(BaseSource):
    def generate_entities(self, cursor: dict):
        return iter(())
