"""The git source on a repository made by the `git` command in a temp folder."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from airweave.collections.models import Entity
from connectors.sources.git_repo import GitSource
from tests.connectors.lifecycle import connect, counts, entity_ids, entity_text, search_ids, sync


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ana Lima", "GIT_AUTHOR_EMAIL": "ana@example.org", "GIT_COMMITTER_NAME": "Ana Lima",
           "GIT_COMMITTER_EMAIL": "ana@example.org", "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "harbour-app"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = {
        "README": "Harbour app: schedules for the ferry between the islands.",
        "docs/deploy.md": "# Deploying\n\nRun `make release` then upload the tarball to the harbour server.",
        "src/tides.py": "def high_tide(day):\n    \"\"\"Return the hour of high tide for a day.\"\"\"\n    return 6\n",
        "logo.png": "\x89PNG not really",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "link.md").symlink_to("docs/deploy.md")
    commit_all(root, "Initial import of the harbour app\n\nSchedules, tides and deployment notes.")
    return root


def listing(repo, cursor=None, **config):
    source = GitSource(GitSource.validate_config({"path": str(repo), **config}))
    return {e.entity_id: e for e in source.generate_entities(cursor or {})}, source


def test_full_listing_files_and_commits(repo):
    entities, source = listing(repo, browse_url="https://git.example.org/sea/harbour-app/")
    sha = git(repo, "rev-parse", "HEAD")
    assert set(entities) == {"README", "docs/deploy.md", "src/tides.py", f"commit:{sha}"}  # no png, no symlink
    assert source.is_full_listing() and source.next_cursor() == {"commit": sha, "branch": "main"}
    deploy = entities["docs/deploy.md"]
    assert [b.name for b in deploy.breadcrumbs] == ["harbour-app", "docs"]
    assert deploy.breadcrumbs[0].entity_type == "GitRepository"
    assert deploy.web_url == "https://git.example.org/sea/harbour-app/blob/main/docs/deploy.md"
    assert deploy.read_bytes().startswith(b"# Deploying")
    assert deploy.updated_at is not None and deploy.raw_source_fields["branch"] == "main"
    assert entities["README"].file_name == "README.txt"
    commit = entities[f"commit:{sha}"]
    assert commit.name == "Initial import of the harbour app"
    assert commit.web_url == f"https://git.example.org/sea/harbour-app/commit/{sha}"
    assert commit.raw_source_fields["author_email"] == "ana@example.org"
    assert commit.raw_source_fields["files_changed"] == 5
    text = commit.textual_representation()
    assert text.startswith(f"Commit {sha[:10]} by Ana Lima on ") and "- src/tides.py (+3 -0)" in text


def test_incremental_reads_only_the_diff_and_reports_deletions(repo):
    _, first = listing(repo)
    cursor = first.next_cursor()
    (repo / "src/tides.py").write_text("def high_tide(day):\n    return 7\n")
    git(repo, "rm", "-q", "README")
    second_sha = commit_all(repo, "Tides move an hour")
    entities, source = listing(repo, cursor)
    assert set(entities) == {"src/tides.py", f"commit:{second_sha}"}
    assert source.is_full_listing() is False
    assert source.deleted_entity_ids() == ["README"]

    # history rewritten: the old tip is not an ancestor any more -> a full listing
    git(repo, "reset", "-q", "--hard", cursor["commit"])
    (repo / "NOTES.md").write_text("notes")
    commit_all(repo, "Another line of history")
    entities, source = listing(repo, {"commit": second_sha, "branch": "main"})
    assert source.is_full_listing() and "README" in entities and "NOTES.md" in entities


def test_config_is_checked(repo, tmp_path):
    with pytest.raises(ValueError, match="not a git repository"):
        GitSource.validate_config({"path": str(tmp_path)})
    with pytest.raises(ValueError, match="no branch 'nope'"):
        GitSource.validate_config({"path": str(repo), "branch": "nope"})
    with pytest.raises(ValueError, match="browse_url"):
        GitSource.validate_config({"path": str(repo), "browse_url": "github.com/x"})
    assert not any(e.startswith("commit:") for e in listing(repo, include_history=False)[0])


def test_lifecycle(repo, make_collection, client):
    collection = make_collection(readable_id="git")
    connection = connect(collection, "git", {"path": str(repo)})
    first = sync(connection)
    assert first.entities_inserted == 4
    assert "docs/deploy.md" in search_ids(client, collection, "how to deploy a release to the harbour server")

    (repo / "docs/deploy.md").write_text("# Deploying\n\nPush a tag; the lighthouse pipeline ships it.")
    edit = commit_all(repo, "Deploy from tags")
    second = sync(connection)
    assert counts(second) == (1, 1, 0, 0)  # the new commit, the edited file; nothing else read
    assert second.entities_encountered == {"GitFileEntity": 1, "GitCommitEntity": 1}
    assert "lighthouse pipeline" in entity_text(connection, "docs/deploy.md")
    assert search_ids(client, collection, "lighthouse pipeline ships tags")[0] in {"docs/deploy.md", f"commit:{edit}"}

    git(repo, "rm", "-q", "src/tides.py")
    removal = commit_all(repo, "Drop the tides module")
    third = sync(connection)
    assert (third.entities_inserted, third.entities_deleted) == (1, 1)
    assert "src/tides.py" not in entity_ids(connection) and f"commit:{removal}" in entity_ids(connection)
    assert "src/tides.py" not in search_ids(client, collection, "hour of high tide")
    assert counts(sync(connection)) == (0, 0, 0, 0)
    full = sync(connection, force_full_sync=True)
    assert (full.entities_inserted, full.entities_updated, full.entities_deleted) == (0, 0, 0)
    assert Entity.objects.get(source_connection=connection, entity_id="docs/deploy.md").source_updated_at is not None
