"""The notion_export source on the real Notion Markdown & CSV export."""
from __future__ import annotations

import shutil
import zipfile

import pytest

from connectors.base import Breadcrumb
from connectors.converters import convert_bytes
from connectors.sources.notion_export import (NotionExportSource, page_properties, split_name,
                                              strip_local_links)
from tests.conftest import SHARED_DATA
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync

EXPORT = SHARED_DATA / "notion_export_md" / "export"
CANON = "3b52ff918c684ad5a1953ecccf59de5d"
APPLIANCES = "080195c4abc7405982e5dff80da8499c"


def listing(path):
    source = NotionExportSource(NotionExportSource.validate_config({"path": str(path)}))
    return {e.entity_id: e for e in source.generate_entities({})}


def test_helpers():
    assert split_name("Gradle Build Cache ad3bdd232cdc4cee9cff64089c56ae62") == ("Gradle Build Cache",
                                                                                "ad3bdd232cdc4cee9cff64089c56ae62")
    assert split_name("Plain page") == ("Plain page", "")
    assert page_properties("# Canon\n\nTags: Printer\nFiles: a.pdf\n\nBody: not a property\n") == {
        "Tags": "Printer", "Files": "a.pdf"}
    assert strip_local_links("[Install Gradle](Gradle%20e3/Install%20Gradle%201a.md) and "
                             "[docs](https://gradle.org) ![img](Gradle%20e3/shot.png)") == \
        "Install Gradle and [docs](https://gradle.org) "


def test_entities_of_the_real_export():
    entities = listing(EXPORT)
    types = [e.entity_type() for e in entities.values()]
    assert types.count("NotionExportPageEntity") == 69 and types.count("NotionExportDatabaseEntity") == 2
    canon = entities[CANON]
    assert canon.name == "Canon TS5100"
    assert canon.breadcrumbs == [Breadcrumb("table", "table", "NotionFolder"),
                                 Breadcrumb(APPLIANCES, "Appliances", "NotionExportDatabaseEntity")]
    assert canon.web_url == f"https://www.notion.so/{CANON}"
    assert canon.raw_source_fields["properties"] == {"Tags": "Printer"}
    gradle = next(e for e in entities.values() if e.name == "Gradle")
    assert "Install Gradle" in gradle.text and "%20" not in gradle.text
    child = next(e for e in entities.values() if e.name == "Gradle Build Cache")
    assert child.breadcrumbs[-1] == Breadcrumb(gradle.entity_id, "Gradle", "NotionExportPageEntity")
    clip = next(e for e in entities.values() if e.raw_source_fields.get("properties", {}).get("Created"))
    assert clip.created_at is not None and clip.raw_source_fields["url"].startswith("http")
    appliances = entities[APPLIANCES]
    assert appliances.name == "Appliances"
    assert "Name: Canon TS5100 | Tags: Printer" in appliances.textual_representation()
    assert "\ufeff" not in appliances.textual_representation()  # the CSV's BOM is not text


def test_zip_export_and_attached_files(tmp_path):
    root = tmp_path / "export"
    shutil.copytree(EXPORT / "table", root / "table")
    (root / "table" / "manual.html").write_text("<h1>Printer manual</h1><p>Load paper face down.</p>")
    archive = tmp_path / "Export-1234.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                zf.write(p, p.relative_to(root).as_posix())
    from_zip = listing(archive)
    assert set(from_zip) == set(listing(root))
    manual = from_zip["table/manual.html"]
    assert manual.entity_type() == "NotionExportFileEntity"
    assert convert_bytes(manual.read_bytes(), manual.file_name, max_bytes=10000).text.endswith("Load paper face down.")


def test_lifecycle(tmp_path, make_collection, client):
    root = tmp_path / "notion"
    shutil.copytree(EXPORT / "table", root / "table")
    shutil.copytree(EXPORT / "Documentation c5b82e1ba6e94f87bb3f537f639378b4" / "Gradle e3e6f0e21ef84b5a8a91e88816f86c92",
                    root / "Gradle e3e6f0e21ef84b5a8a91e88816f86c92")
    collection = make_collection(readable_id="notion")
    connection = connect(collection, "notion_export", {"path": str(root)})
    first = sync(connection)
    assert first.entities_inserted == len(entity_ids(connection)) >= 15
    assert CANON in search_ids(client, collection, "Canon TS5100 printer drivers")

    page = next((root / "table").rglob(f"Canon TS5100 {CANON}.md"))
    page.write_text("# Canon TS5100\n\nTags: Printer\n\nThe printer sits in the lighthouse office, second floor.\n")
    build_cache = next(root.rglob("Gradle Build Cache *.md"))
    build_cache_id = split_name(build_cache.stem)[1]
    build_cache.unlink()
    second = sync(connection)
    assert (second.entities_inserted, second.entities_updated, second.entities_deleted) == (0, 1, 1)
    assert "lighthouse office" in entity_text(connection, CANON)
    assert search_ids(client, collection, "which printer is in the lighthouse office")[0] == CANON
    assert build_cache_id not in entity_ids(connection)

    page.unlink()
    third = sync(connection)
    assert third.entities_deleted == 1 and CANON not in entity_ids(connection)
    assert CANON not in search_ids(client, collection, "printer in the lighthouse office")
    assert counts(sync(connection))[:2] == (0, 0)


@pytest.mark.slow
def test_full_export_syncs_and_answers(make_collection, client):
    collection = make_collection(readable_id="notion-full")
    connection = connect(collection, "notion_export", {"path": str(EXPORT)})
    job = sync(connection)
    assert job.entities_inserted == 71 - job.entities_skipped
    hits = search_ids(client, collection, "How do I enable the Gradle build cache?", limit=5)
    assert "ad3bdd232cdc4cee9cff64089c56ae62" in hits  # the "Gradle Build Cache" page
