"""Git repository: the files at the tip of a branch and the commit history (GitPython).

Config: `path` (a local clone, bare or not), `branch` (default: the checked-out branch),
`include_history` (commits as entities, default true), `max_commits` (newest first, default
2000), `browse_url` (e.g. https://github.com/org/repo, for links).

Entities:
- GitFileEntity: `entity_id` = the file's path in the repository; name = the file name;
  breadcrumbs = repository → folders; content = the blob, converted like any file (Markdown,
  code, PDF, ...; README/LICENSE/Makefile-like names without extension read as text). Symbolic
  links, submodules and files the converters cannot read are not listed. `updated_at` = the
  newest commit touching the file within the history read. `web_url` =
  `<browse_url>/blob/<branch>/<path>`.
- GitCommitEntity: `entity_id` = `commit:<sha>`; name = the summary line; text = author,
  date, message and the files changed with their line counts; `web_url` =
  `<browse_url>/commit/<sha>`.

Incremental by commit: the cursor keeps the branch tip that was synced. When the new tip
descends from it, only the files changed between the two commits (`git diff --name-status`)
and the new commits are read; deleted files are reported as deletions. Without a cursor, on a
forced full sync, or when history was rewritten (the old tip is no longer an ancestor), the
whole tree is listed (a full listing: absent entities are deleted).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Iterator
from urllib.parse import quote, urlsplit

from connectors.base import BaseEntity, BaseSource, BlobEntity, Breadcrumb, ConfigField, SourceError
from connectors.converters import SUPPORTED_EXTENSIONS
from connectors.registry import source
from connectors.sources._export_files import validate_local_path

logger = logging.getLogger(__name__)

TEXT_NAMES = frozenset({"readme", "license", "licence", "copying", "changelog", "changes", "notice", "authors",
                        "contributing", "makefile", "dockerfile", "procfile", "gemfile", "rakefile", "vagrantfile",
                        "codeowners"})
MAX_FILES_PER_COMMIT_TEXT = 200
_RECORD, _FIELD = "\x1e", "\x1f"
_LOG_FORMAT = f"{_RECORD}%H{_FIELD}%an{_FIELD}%ae{_FIELD}%at{_FIELD}%cn{_FIELD}%ct{_FIELD}%P{_FIELD}%B{_FIELD}"


@dataclass
class GitFileEntity(BlobEntity):
    """A file at the branch tip. `file_name` may carry an added `.txt` for extension-less text files."""

    blob_sha: str = ""


@dataclass
class GitCommitEntity(BaseEntity):
    """One commit of the branch's history."""

    sha: str = ""
    text: str = ""

    def textual_representation(self) -> str:
        return self.text


def _converter_name(path: str) -> str | None:
    """The file name the converters should see, or None when the file is not listed."""
    name = PurePosixPath(path).name
    if PurePosixPath(name).suffix.lower() in SUPPORTED_EXTENSIONS:
        return name
    stem = name.split(".", 1)[0].lower()
    if stem in TEXT_NAMES:
        return name + ".txt"
    return None


def _ts(value: str | int | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value), tz=timezone.utc)
    except (TypeError, ValueError):
        return None


@source(
    name="Git Repository",
    short_name="git",
    description="A git repository on this server: the files at a branch's tip and its commit history, "
                "synced incrementally by commit.",
    auth_methods=("direct",),
    labels=("Code",),
    entity_types=(GitFileEntity, GitCommitEntity),
    supports_temporal_relevance=True,
    config_fields=(
        ConfigField("path", "Repository path", "string", "A local clone (its working folder or a bare "
                    "repository).", required=True),
        ConfigField("branch", "Branch", "string", "The branch to index (default: the checked-out branch)."),
        ConfigField("include_history", "Include history", "boolean", "Index commits (message, author, "
                    "files changed) as well as files.", default=True),
        ConfigField("max_commits", "Max commits", "integer", "How many of the newest commits a full sync "
                    "reads.", default=2000),
        ConfigField("browse_url", "Browse URL", "string", "The repository's web page (e.g. "
                    "https://github.com/org/repo), for links to files and commits."),
    ),
)
class GitSource(BaseSource):
    """See the module docstring."""

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._full = True
        self._deleted: list[str] = []
        self._cursor: dict = {}
        self._repo = None

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        out = super().validate_config(config, for_api=for_api)
        path = validate_local_path(out["path"], for_api=for_api)
        import git

        try:
            repo = git.Repo(path)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise ValueError(f"config field 'path': {out['path']!r} is not a git repository") from None
        try:
            if out.get("branch"):
                if out["branch"] not in [h.name for h in repo.heads] and not _resolves(repo, out["branch"]):
                    raise ValueError(f"config field 'branch': no branch {out['branch']!r} in the repository")
            elif not repo.head.is_valid():
                raise ValueError("config field 'path': the repository has no commit yet")
        finally:
            repo.close()
        out["path"] = str(path)
        if out["max_commits"] < 0:
            raise ValueError("config field 'max_commits' must be 0 or more")
        browse = (out.get("browse_url") or "").strip().rstrip("/")
        if browse:
            parts = urlsplit(browse)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("config field 'browse_url' must be an http(s) URL, e.g. https://github.com/org/repo")
            out["browse_url"] = browse
        return out

    def is_full_listing(self) -> bool:
        return self._full

    def next_cursor(self) -> dict:
        return self._cursor

    def deleted_entity_ids(self) -> list[str]:
        """Paths `git diff --name-status` reported deleted since the last synced tip."""
        return list(self._deleted)

    # -- listing -----------------------------------------------------------------------

    def _open(self):
        import git

        try:
            return git.Repo(self.config["path"])
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise SourceError(f"not a git repository: {self.config['path']}", category="config_error") from exc

    def generate_entities(self, cursor: dict) -> Iterator[BaseEntity]:
        import git

        repo = self._repo = self._open()
        branch = self.config.get("branch") or _current_branch(repo)
        try:
            tip = repo.commit(branch)
        except (git.BadName, ValueError) as exc:
            raise SourceError(f"branch {branch!r} not found in {self.config['path']}", category="config_error") from exc
        self._cursor = {"commit": tip.hexsha, "branch": branch}
        self._deleted = []
        previous = (cursor or {}).get("commit")
        incremental = bool(previous) and (cursor or {}).get("branch") == branch and _is_ancestor(repo, previous, tip.hexsha)
        self._full = not incremental
        repo_name = Path(self.config["path"]).name.removesuffix(".git") or "repository"
        repo_crumb = Breadcrumb(f"repo:{repo_name}", repo_name, "GitRepository")

        if incremental and previous == tip.hexsha:
            return
        rev_range = f"{previous}..{tip.hexsha}" if incremental else tip.hexsha
        max_count = None if incremental else self.config.get("max_commits", 2000)
        commits = _log(repo, rev_range, max_count)  # read even without history: files' updated_at
        touched: dict[str, datetime] = {}
        for c in commits:
            for path, _, _ in c["files"]:
                touched.setdefault(path, c["committed"])

        paths = None
        if incremental:
            paths, self._deleted = _diff(repo, previous, tip.hexsha)
        yield from self._files(repo, tip, branch, repo_crumb, touched, paths)
        if self.config.get("include_history", True):
            for c in commits:
                yield self._commit_entity(c, repo_crumb, branch)

    def _files(self, repo, tip, branch: str, crumb: Breadcrumb, touched: dict, paths: list[str] | None
               ) -> Iterator[GitFileEntity]:
        if paths is None:
            blobs = (item for item in tip.tree.traverse() if item.type == "blob")
        else:
            blobs = []
            for path in sorted(paths):
                try:
                    item = tip.tree / path
                except KeyError:
                    continue
                if item.type == "blob":
                    blobs.append(item)
        browse = self.config.get("browse_url") or ""
        for blob in blobs:
            if blob.mode & 0o170000 != 0o100000:  # symlinks (0o120000) and anything not a regular file
                continue
            file_name = _converter_name(blob.path)
            if file_name is None:
                continue
            parts = PurePosixPath(blob.path).parts
            crumbs = [crumb] + [Breadcrumb("/".join(parts[: i + 1]), parts[i], "GitFolder")
                                for i in range(len(parts) - 1)]
            binsha = blob.binsha
            yield GitFileEntity(
                entity_id=blob.path, name=parts[-1], breadcrumbs=crumbs, updated_at=touched.get(blob.path),
                web_url=f"{browse}/blob/{quote(branch)}/{quote(blob.path)}" if browse else "",
                raw_source_fields={"path": blob.path, "extension": PurePosixPath(blob.path).suffix.lower(),
                                   "size_bytes": blob.size, "blob_sha": blob.hexsha, "branch": branch},
                file_name=file_name, size=blob.size, blob_sha=blob.hexsha,
                load=lambda repo=repo, binsha=binsha: repo.odb.stream(binsha).read(),
            )

    def _commit_entity(self, c: dict, crumb: Breadcrumb, branch: str) -> GitCommitEntity:
        browse = self.config.get("browse_url") or ""
        message = c["message"].strip()
        summary = message.splitlines()[0] if message else f"commit {c['sha'][:7]}"
        lines = [f"Commit {c['sha'][:10]} by {c['author']} on {c['authored'].date().isoformat() if c['authored'] else '?'}",
                 "", message]
        if c["files"]:
            lines += ["", "Files changed:"]
            lines += [f"- {path} (+{added} -{removed})" for path, added, removed in c["files"][:MAX_FILES_PER_COMMIT_TEXT]]
            if len(c["files"]) > MAX_FILES_PER_COMMIT_TEXT:
                lines.append(f"- … and {len(c['files']) - MAX_FILES_PER_COMMIT_TEXT} more")
        return GitCommitEntity(
            entity_id=f"commit:{c['sha']}", name=summary[:300], breadcrumbs=[crumb],
            created_at=c["authored"], updated_at=c["committed"],
            web_url=f"{browse}/commit/{c['sha']}" if browse else "",
            raw_source_fields={"sha": c["sha"], "author_name": c["author"], "author_email": c["author_email"],
                               "committer_name": c["committer"], "parents": c["parents"], "branch": branch,
                               "files_changed": len(c["files"]),
                               "insertions": sum(a for _, a, _ in c["files"]),
                               "deletions": sum(d for _, _, d in c["files"])},
            sha=c["sha"], text="\n".join(lines),
        )


def _resolves(repo, ref: str) -> bool:
    try:
        repo.commit(ref)
        return True
    except Exception:  # BadName, ValueError, GitCommandError
        return False


def _current_branch(repo) -> str:
    try:
        return repo.active_branch.name
    except TypeError:  # detached HEAD
        return "HEAD"


def _is_ancestor(repo, old: str, new: str) -> bool:
    import git

    try:
        repo.git.merge_base("--is-ancestor", old, new)
        return True
    except git.GitCommandError:  # not an ancestor, or the old commit no longer exists
        return False


def _diff(repo, old: str, new: str) -> tuple[list[str], list[str]]:
    """(added or modified paths, deleted paths) between two commits, renames as delete + add."""
    out = repo.git.diff("--name-status", "--no-renames", "-z", old, new)
    fields = out.split("\0")
    changed, deleted = [], []
    for i in range(0, len(fields) - 1, 2):
        status, path = fields[i], fields[i + 1]
        if status.startswith("D"):
            deleted.append(path)
        elif status:
            changed.append(path)
    return changed, deleted


def _log(repo, rev_range: str, max_count: int | None) -> list[dict]:
    """Commits of `rev_range`, newest first, with their numstat (one git call)."""
    args = [f"--format={_LOG_FORMAT}", "--numstat", "--no-renames", rev_range]
    if max_count is not None:
        args.insert(0, f"--max-count={max_count}")
    raw = repo.git.log(*args, stdout_as_string=False).decode("utf-8", "replace")
    commits = []
    for record in raw.split(_RECORD)[1:]:
        fields = record.split(_FIELD)
        if len(fields) < 9:
            continue
        sha, author, email, authored, committer, committed, parents, message, stat = fields[:9]
        files = []
        for line in stat.strip().splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3:
                added, removed, path = parts
                files.append((path, int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0))
        commits.append({"sha": sha, "author": author, "author_email": email, "authored": _ts(authored),
                        "committer": committer, "committed": _ts(committed), "parents": parents.split(),
                        "message": message, "files": files})
    return commits
