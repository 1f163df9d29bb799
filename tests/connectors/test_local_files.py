"""The local_files source: listing rules, ids, globs, symlinks, config validation.

No database; Django settings are not needed (`allowed_roots` is patched where it matters).
"""
from __future__ import annotations

import os
from collections import Counter
from datetime import timezone
from pathlib import Path

import pytest

from connectors import registry
from connectors.base import Breadcrumb, SkipEntity, SourceError
from connectors.converters import convert_file
from connectors.sources import local_files
from connectors.sources.local_files import LocalFileEntity, LocalFilesSource

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
HANDBOOK = DATA / "docs_18f_handbook"
MIXED = DATA / "docs_mixed_formats"


def write(path: Path, text: str = "some text\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "root"
    write(root / "README.md", "# Readme\n\nNo front matter here.\n")
    write(root / "docs" / "guide" / "intro.md",
          "---\ntitle: Getting started\ntags: [onboarding]\n---\n\nWelcome aboard.\n")
    write(root / "docs" / "notes.txt")
    write(root / "docs" / "drafts" / "wip.md")
    write(root / "src" / "app.py", "print('hi')\n")
    write(root / "image.png", "not really a png")
    write(root / ".hidden.md")
    write(root / ".git" / "config.txt")
    write(root / "node_modules" / "pkg" / "readme.md")
    write(root / "src" / "__pycache__" / "app.py")
    write(root / "docs" / "~$lock.docx")
    return root


def listing(config: dict) -> list[LocalFileEntity]:
    source = LocalFilesSource(LocalFilesSource.validate_config(config))
    return list(source.generate_entities({}))


def ids(config: dict) -> list[str]:
    return [e.entity_id for e in listing(config)]


def test_registered_with_capabilities():
    assert registry.get_source("local_files") is LocalFilesSource
    assert LocalFilesSource.name == "Local Files"
    assert LocalFilesSource.auth_methods == ("direct",) and LocalFilesSource.auth_fields == ()
    assert LocalFilesSource.labels == ("Files",)
    assert LocalFilesSource.entity_types == (LocalFileEntity,)
    assert LocalFilesSource.supports_continuous is False
    assert [f.name for f in LocalFilesSource.config_fields] == ["path", "include", "exclude"]
    assert LocalFileEntity.entity_type() == "LocalFileEntity"


def test_lists_supported_files_in_sorted_order_skipping_hidden_and_tooling(tree):
    assert ids({"path": str(tree)}) == [
        "README.md", "docs/drafts/wip.md", "docs/guide/intro.md", "docs/notes.txt", "src/app.py",
    ]


def test_entity_fields(tree):
    entities = {e.entity_id: e for e in listing({"path": str(tree)})}
    intro = entities["docs/guide/intro.md"]
    assert intro.name == "Getting started"  # the front-matter title
    assert intro.breadcrumbs == [Breadcrumb("docs", "docs", "LocalFolderEntity"),
                                 Breadcrumb("docs/guide", "guide", "LocalFolderEntity")]
    assert intro.web_url == (tree / "docs" / "guide" / "intro.md").resolve().as_uri()
    assert intro.web_url.startswith("file:///")
    assert intro.raw_source_fields == {"title": "Getting started", "tags": ["onboarding"],
                                       "path": "docs/guide/intro.md", "extension": ".md",
                                       "size_bytes": intro.size}
    assert intro.path == (tree / "docs" / "guide" / "intro.md").resolve()
    assert intro.extension == ".md" and intro.mime_type == "text/markdown"
    assert intro.updated_at.tzinfo == timezone.utc and intro.created_at.tzinfo == timezone.utc
    assert intro.entity_type() == "LocalFileEntity"

    readme = entities["README.md"]
    assert readme.name == "README.md" and readme.breadcrumbs == []  # no front matter: file name
    assert entities["src/app.py"].mime_type == "text/x-python"
    assert convert_file(intro.path, max_bytes=1024).text == "Welcome aboard."


def test_content_hash_is_stable_and_follows_content(tree):
    first = {e.entity_id: e.content_hash() for e in listing({"path": str(tree)})}
    assert first == {e.entity_id: e.content_hash() for e in listing({"path": str(tree)})}
    write(tree / "docs" / "notes.txt", "changed text\n")
    second = {e.entity_id: e.content_hash() for e in listing({"path": str(tree)})}
    assert [k for k in first if first[k] != second[k]] == ["docs/notes.txt"]


@pytest.mark.parametrize("config, expected", [
    ({"include": ["*.md"]}, ["README.md", "docs/drafts/wip.md", "docs/guide/intro.md"]),
    ({"include": ["docs/**/*.md"]}, ["docs/drafts/wip.md", "docs/guide/intro.md"]),
    ({"include": ["docs/*.txt", "src"]}, ["docs/notes.txt", "src/app.py"]),
    ({"include": ["*.png"]}, []),  # unsupported files are never listed
    ({"exclude": ["drafts"]}, ["README.md", "docs/guide/intro.md", "docs/notes.txt", "src/app.py"]),
    ({"exclude": ["docs/**"]}, ["README.md", "src/app.py"]),
    ({"exclude": ["**/*.md", "src/app.p?"]}, ["docs/notes.txt"]),
    ({"include": ["*.md"], "exclude": ["docs/guide"]}, ["README.md", "docs/drafts/wip.md"]),
])
def test_include_and_exclude_globs(tree, config, expected):
    assert ids({"path": str(tree), **config}) == expected


def test_symlinks_do_not_leave_the_root(tree, tmp_path):
    outside = tmp_path / "outside"
    write(outside / "secret.md", "---\ntitle: Secret\n---\n\nsecret\n")
    write(outside / "deep" / "more.txt", "secret too\n")
    os.symlink(outside / "secret.md", tree / "docs" / "secret-link.md")
    os.symlink(outside, tree / "escape")
    os.symlink("../../..", tree / "docs" / "up")  # a relative link out of the root
    os.symlink(tree, tree / "docs" / "loop")  # a cycle back to the root
    os.symlink(tree / "src" / "app.py", tree / "alias.py")  # inside: same file, listed once
    os.symlink(tree / "missing.md", tree / "dangling.md")
    os.symlink(tree / "src", tree / "a-src-link")  # inside folder, reached first via the link

    entities = listing({"path": str(tree)})
    listed = [e.entity_id for e in entities]
    assert listed == ["README.md", "a-src-link/app.py", "docs/drafts/wip.md",
                      "docs/guide/intro.md", "docs/notes.txt"]
    assert all(e.path.resolve().is_relative_to(tree.resolve()) for e in entities)


def test_single_file_root(tree):
    entities = listing({"path": str(tree / "docs" / "guide" / "intro.md")})
    assert [(e.entity_id, e.name, e.breadcrumbs) for e in entities] == [("intro.md", "Getting started", [])]
    # an unsupported single file is still yielded, so its skip reason reaches the job
    (png,) = listing({"path": str(tree / "image.png")})
    with pytest.raises(SkipEntity, match=r"unsupported file type: \.png"):
        convert_file(png.path, max_bytes=1024)


def test_missing_root_fails_the_source(tmp_path):
    source = LocalFilesSource({"path": str(tmp_path / "gone")})
    with pytest.raises(SourceError, match="path does not exist") as info:
        list(source.generate_entities({}))
    assert info.value.category == "config_error"


def test_unreadable_subfolder_makes_the_listing_partial(tree, monkeypatch):
    real_scandir = os.scandir

    def scandir(path):
        if Path(path).name == "guide":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(local_files.os, "scandir", scandir)
    source = LocalFilesSource(LocalFilesSource.validate_config({"path": str(tree)}))
    listed = [e.entity_id for e in source.generate_entities({})]
    assert "docs/guide/intro.md" not in listed and "docs/notes.txt" in listed
    assert source.is_full_listing() is False


def test_validate_config_resolves_and_checks(tree, tmp_path):
    config = LocalFilesSource.validate_config({"path": str(tree / "docs" / ".." / "src")})
    assert config == {"path": str((tree / "src").resolve()), "exclude": []}
    with pytest.raises(ValueError, match="'path' is required"):
        LocalFilesSource.validate_config({})
    with pytest.raises(ValueError, match="does not exist"):
        LocalFilesSource.validate_config({"path": str(tmp_path / "nope")})
    with pytest.raises(ValueError, match="must not be empty"):
        LocalFilesSource.validate_config({"path": "  "})
    with pytest.raises(ValueError, match="unknown config field"):
        LocalFilesSource.validate_config({"path": str(tree), "recursive": True})
    with pytest.raises(ValueError, match="'include' must be a"):
        LocalFilesSource.validate_config({"path": str(tree), "include": "*.md"})


def test_validate_config_for_api_stays_under_the_allowed_roots(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(local_files, "allowed_roots", lambda: [tree.resolve() / "docs"])
    ok = LocalFilesSource.validate_config({"path": str(tree / "docs" / "guide")}, for_api=True)
    assert ok["path"] == str((tree / "docs" / "guide").resolve())
    with pytest.raises(ValueError, match="outside the folders this server allows"):
        LocalFilesSource.validate_config({"path": str(tree / "src")}, for_api=True)
    # outside and missing: the answer does not reveal whether the path exists
    with pytest.raises(ValueError, match="outside the folders this server allows"):
        LocalFilesSource.validate_config({"path": "/etc/does-not-exist"}, for_api=True)
    # a link inside the allowed root pointing out of it is judged by its target
    os.symlink(tree / "src", tree / "docs" / "to-src")
    with pytest.raises(ValueError, match="outside the folders this server allows"):
        LocalFilesSource.validate_config({"path": str(tree / "docs" / "to-src")}, for_api=True)
    with pytest.raises(ValueError, match="must be an absolute path"):
        LocalFilesSource.validate_config({"path": "docs"}, for_api=True)
    # operators (not the API) may index anything that exists
    assert LocalFilesSource.validate_config({"path": str(tree / "src")})["path"].endswith("src")


def test_allowed_roots_without_django_settings(tmp_path, monkeypatch):
    monkeypatch.setattr(local_files, "_setting", lambda name, default: default)
    monkeypatch.setenv("AIRWEAVE_LOCAL_ROOTS", os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert local_files.allowed_roots() == [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    monkeypatch.delenv("AIRWEAVE_LOCAL_ROOTS")
    assert Path.home().resolve() in local_files.allowed_roots()


def test_handbook_names_and_breadcrumbs_from_real_front_matter():
    entities = {e.entity_id: e for e in listing({"path": str(HANDBOOK), "include": ["pages/**/*.md"]})}
    assert len(entities) == 246
    fmla = entities["pages/travel-and-leave/fmla.md"]
    assert fmla.name == "Family Medical Leave Act (FMLA)"
    assert [b.entity_id for b in fmla.breadcrumbs] == ["pages", "pages/travel-and-leave"]
    assert [b.name for b in fmla.breadcrumbs] == ["pages", "travel-and-leave"]
    assert fmla.raw_source_fields["keywords"].startswith("leave, request")
    assert all(e.name and e.name != e.entity_id.rsplit("/", 1)[-1] for e in entities.values())


def test_mixed_formats_end_to_end():
    """List the Docling sample folder and convert every file, as the sync pipeline will."""
    entities = listing({"path": str(MIXED), "exclude": ["groundtruth_md"]})
    outcomes = Counter()
    for entity in entities:
        try:
            convert_file(entity.path, max_bytes=25 * 1024 * 1024)
            outcomes["ok"] += 1
        except SkipEntity as exc:
            outcomes[exc.reason] += 1
    assert outcomes == {"ok": 26, "encrypted PDF": 1, "empty: no text extracted": 1}
    assert {e.extension for e in entities} == {".md", ".csv", ".docx", ".html", ".pdf", ".pptx", ".xlsx"}


@pytest.mark.parametrize("inside", [".ssh", ".config/gh", ".aws/credentials", ".netrc", ".env", "keys/server.pem",
                                    "keys/id_ed25519"])
def test_the_api_refuses_hidden_and_credential_paths(tmp_path, monkeypatch, inside):
    home = tmp_path / "home"
    target = home / inside
    if inside == ".ssh":  # a folder of secrets
        target.mkdir(parents=True)
        (target / "config.md").write_text("Host prod\n  IdentityFile ~/.ssh/id_prod\n")
    else:  # one secret file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("secret = hunter2\n")
    monkeypatch.setattr(local_files, "allowed_roots", lambda: [home.resolve()])
    with pytest.raises(ValueError, match="hidden or credential file or folder"):
        LocalFilesSource.validate_config({"path": str(target)}, for_api=True)
    # the folder of documents around it is fine, and the walk leaves the secret out
    (home / "notes.md").write_text("# Notes\n")
    LocalFilesSource.validate_config({"path": str(home)}, for_api=True)
    listed = [e.entity_id for e in LocalFilesSource({"path": str(home)}).generate_entities({})]
    assert listed == ["notes.md"]
