"""Local Files: a folder (or one file) on the server's disk, one entity per supported file.

Config: `path` (folder or file), `include` / `exclude` (glob patterns on the path relative
to the root; `**` crosses folders; a pattern without `/` matches a file or folder name at any
depth; a folder that matches matches everything below it). Hidden files and folders,
`node_modules`, `__pycache__`, credential files (`*.pem`, `*.key`, `id_*`) and Office lock files
(`~$x.docx`) are always skipped; over the API a `path` that is or goes through a hidden or
credential file or folder (`~/.ssh`, `~/.config/gh`, `.env`) is refused.

Entities (docs/architecture.md, Conventions): `entity_id` = POSIX path relative to the root;
`name` = front-matter title, else the file name; one Breadcrumb per folder; `web_url` = file:// URI; front-matter
fields plus `path`, `extension`, `size_bytes` in `raw_source_fields`. The files are converted
later, by the sync pipeline, with `connectors.converters.convert_file`, which decides what is
too large or unreadable and raises SkipEntity with the reason.

Symbolic links are followed only when their target stays under the root; a file or folder
reachable by two paths (links, hard links) is listed once. The walk is sorted, so the order
is deterministic. A folder that cannot be read makes the listing partial (no deletions).
"""
from __future__ import annotations

import logging
import mimetypes
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from connectors.base import BaseSource, Breadcrumb, ConfigField, FileEntity, SourceError
from connectors.converters import SUPPORTED_EXTENSIONS, read_front_matter
from connectors.registry import source

logger = logging.getLogger(__name__)

ALWAYS_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
CREDENTIAL_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks")
_PROJECT_DIR = Path(__file__).resolve().parents[2]
_MIME_OVERRIDES = {  # not known to every platform's mimetypes table
    ".md": "text/markdown", ".markdown": "text/markdown", ".mdx": "text/markdown",
    ".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
    ".ts": "text/x-typescript", ".tsx": "text/x-typescript",
}


@dataclass
class LocalFileEntity(FileEntity):
    """A file below the root. `path` (FileEntity) is the absolute path to read."""

    extension: str = ""       # lower-case, with the dot: ".pdf"
    mime_type: str = ""
    relative_path: str = ""   # same as entity_id


@source(
    name="Local Files",
    short_name="local_files",
    description="Files in a folder on the server: Markdown, text and source code, PDF, Word, "
                "PowerPoint, Excel, CSV and HTML.",
    auth_methods=("direct",),
    auth_fields=(),
    labels=("Files",),
    entity_types=(LocalFileEntity,),
    supports_continuous=False,
    config_fields=(
        ConfigField("path", "Path", "string", "A folder (read recursively) or a single file.",
                    required=True),
        ConfigField("include", "Include", "array", "Glob patterns of files to index, relative to "
                    "the folder (e.g. `docs/**/*.md`). Default: every supported file.",
                    items_type="string"),
        ConfigField("exclude", "Exclude", "array", "Glob patterns of files or folders to skip "
                    "(hidden files, node_modules and __pycache__ are always skipped).",
                    items_type="string", default=[]),
    ),
)
class LocalFilesSource(BaseSource):
    """Lists the files; see the module docstring for the rules."""

    def __init__(self, config: dict, credentials: dict | None = None):
        super().__init__(config, credentials)
        self._complete = True

    @classmethod
    def validate_config(cls, config: dict, *, for_api: bool = False) -> dict:
        """Check the fields, then resolve `path` to an absolute path that exists.

        With `for_api`, the path must be absolute and lie under one of AIRWEAVE_LOCAL_ROOTS
        (checked before existence, so API callers cannot probe the rest of the disk).
        Raises ValueError with a message naming the field.
        """
        out = super().validate_config(config, for_api=for_api)
        raw = out["path"].strip()
        if not raw:
            raise ValueError("config field 'path' must not be empty")
        try:
            expanded = Path(raw).expanduser()
            if for_api and not expanded.is_absolute():
                raise ValueError("config field 'path' must be an absolute path")
            resolved = expanded.resolve()
        except (OSError, RuntimeError) as exc:  # "~unknownuser", loops, bad bytes
            raise ValueError(f"config field 'path': cannot resolve {raw!r} ({exc})") from exc
        if for_api:
            root = next((root for root in allowed_roots() if resolved.is_relative_to(root)), None)
            if root is None:
                raise ValueError(f"config field 'path': {raw!r} is outside the folders this server "
                                 "allows (AIRWEAVE_LOCAL_ROOTS)")
            secret = next((part for part in (expanded.parts if expanded.is_relative_to(root) else ())
                           + resolved.relative_to(root).parts if is_secret_name(part)), None)
            if secret is not None:
                raise ValueError(f"config field 'path': {raw!r} goes through {secret!r}, a hidden or credential "
                                 "file or folder (.ssh, .aws, .env, *.pem, id_* …); its contents would be "
                                 "searchable by the whole organization. Choose a folder of documents instead")
        if not resolved.exists():
            raise ValueError(f"config field 'path': {raw!r} does not exist")
        if not (resolved.is_dir() or resolved.is_file()):
            raise ValueError(f"config field 'path': {raw!r} is neither a folder nor a file")
        out["path"] = str(resolved)
        for name in ("include", "exclude"):
            if name in out:
                out[name] = [p.strip() for p in out[name] if p.strip()]
        return out

    def is_full_listing(self) -> bool:
        return self._complete

    def generate_entities(self, cursor: dict) -> Iterator[LocalFileEntity]:
        """Yield a LocalFileEntity per listed file, in sorted path order.

        Raises SourceError(category="config_error") when the root does not exist or is
        not readable.
        """
        self._complete = True
        raw = str(self.config.get("path") or "").strip()
        if not raw:
            raise SourceError("path is empty", category="config_error")
        try:
            root = Path(raw).expanduser().resolve()
        except (OSError, RuntimeError) as exc:
            raise SourceError(f"path cannot be resolved: {raw} ({exc})", category="config_error")
        if not root.exists():
            raise SourceError(f"path does not exist: {raw}", category="config_error")
        if root.is_file():  # one file: listed even when unsupported, so the skip says why
            yield self._entity(root, root.parent, (root.name,), root.stat())
            return
        if not root.is_dir():
            raise SourceError(f"path is neither a folder nor a file: {raw}",
                              category="config_error")
        try:
            os.scandir(root).close()
        except OSError as exc:
            raise SourceError(f"path is not readable: {raw} ({exc.strerror})",
                              category="config_error")

        include = [_compile(p) for p in self.config.get("include") or []]
        exclude = [_compile(p) for p in self.config.get("exclude") or []]
        for file_path, parts, st in self._walk(root, include, exclude):
            yield self._entity(file_path, root, parts, st)

    def _walk(self, root: Path, include, exclude
              ) -> Iterator[tuple[Path, tuple[str, ...], os.stat_result]]:
        """(path to read, relative parts, stat) of every listed file.

        Depth-first; each folder's entries sorted by name, a subfolder walked where it sorts.
        """
        root_stat = root.stat()
        seen: set[tuple[int, int]] = {(root_stat.st_dev, root_stat.st_ino)}
        stack = [(iter(self._entries(root)), ())]
        while stack:
            entries, folder_parts = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            parts = (*folder_parts, entry.name)
            if _always_skipped(entry.name) or any(_matches(rx, parts) for rx in exclude):
                continue
            try:
                target = Path(entry.path)
                if entry.is_symlink():
                    target = target.resolve()
                    if not target.is_relative_to(root):
                        logger.info("local_files: skipping %s: link leaves the root", entry.path)
                        continue
                st = target.stat()
            except (OSError, RuntimeError) as exc:  # dangling or looping link, vanished file
                logger.info("local_files: skipping %s: %s", entry.path, exc)
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:  # a second path to a file or folder already listed (or a cycle)
                continue
            if stat.S_ISDIR(st.st_mode):
                seen.add(key)
                stack.append((iter(self._entries(Path(entry.path))), parts))
            elif stat.S_ISREG(st.st_mode) and _is_listed(parts, include):
                seen.add(key)
                yield target, parts, st

    def _entries(self, folder: Path) -> list[os.DirEntry]:
        """The folder's entries sorted by name; [] (and a partial listing) when unreadable."""
        try:
            with os.scandir(folder) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            logger.warning("local_files: cannot list %s: %s; listing is partial", folder, exc)
            self._complete = False
            return []

    def _entity(self, file_path: Path, root: Path, parts: tuple[str, ...],
                st: os.stat_result) -> LocalFileEntity:
        rel = "/".join(parts)
        extension = Path(parts[-1]).suffix.lower()
        front_matter, title = read_front_matter(file_path)
        modified = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
        created_ts = getattr(st, "st_birthtime", None) or min(st.st_ctime, st.st_mtime)
        return LocalFileEntity(
            entity_id=rel,
            name=title or parts[-1],
            breadcrumbs=[Breadcrumb("/".join(parts[: i + 1]), parts[i], "LocalFolderEntity")
                         for i in range(len(parts) - 1)],
            created_at=datetime.fromtimestamp(created_ts, tz=timezone.utc),
            updated_at=modified,
            web_url=root.joinpath(*parts).as_uri(),
            raw_source_fields={**front_matter, "path": rel, "extension": extension,
                               "size_bytes": st.st_size},
            path=file_path,
            size=st.st_size,
            extension=extension,
            mime_type=_mime_type(parts[-1], extension),
            relative_path=rel,
        )


def allowed_roots() -> list[Path]:
    """The resolved folders API callers may index: settings.AIRWEAVE_LOCAL_ROOTS.

    Without configured Django settings: the AIRWEAVE_LOCAL_ROOTS environment variable
    (os.pathsep-separated), else the user's home and the project folder (docs/architecture.md, Conventions).
    """
    roots = _setting("AIRWEAVE_LOCAL_ROOTS", None)
    if roots is None:
        env = os.environ.get("AIRWEAVE_LOCAL_ROOTS")
        roots = env if env else [str(Path.home()), str(_PROJECT_DIR)]
    if isinstance(roots, str):
        roots = roots.split(os.pathsep)
    return [Path(r).expanduser().resolve() for r in roots if str(r).strip()]


def _setting(name: str, default):
    """A Django setting, or `default` when settings are not configured (plain scripts, tests)."""
    from django.conf import settings

    if not settings.configured:
        return default
    return getattr(settings, name, default)


def is_secret_name(name: str) -> bool:
    """True for a hidden file or folder (`.ssh`, `.aws`, `.config`, `.env`, `.netrc` …) or a
    credential file by its name (`*.pem`, `*.key`, `*.p12`, `id_rsa`, `id_ed25519.pub` …)."""
    return name.startswith(".") or name.lower().endswith(CREDENTIAL_SUFFIXES) or name.startswith("id_")


def _always_skipped(name: str) -> bool:
    return is_secret_name(name) or name.startswith("~$") or name in ALWAYS_SKIPPED_DIRS


def _is_listed(parts: tuple[str, ...], include) -> bool:
    if Path(parts[-1]).suffix.lower() not in SUPPORTED_EXTENSIONS:
        return False
    return not include or any(_matches(rx, parts) for rx in include)


def _matches(pattern: tuple[bool, re.Pattern], parts: tuple[str, ...]) -> bool:
    """True when the path, or one of the folders above it, matches the compiled pattern."""
    anchored, rx = pattern
    for i in range(1, len(parts) + 1):
        subject = "/".join(parts[:i]) if anchored else parts[i - 1]
        if rx.fullmatch(subject):
            return True
    return False


@lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[bool, re.Pattern]:
    """(anchored, regex). A pattern with a `/` is matched against the whole relative path,
    one without against each name. `**` spans folders, `*` and `?` stay within one name,
    `[abc]`/`[!abc]` are character classes."""
    pattern = pattern.strip().lstrip("/")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/") or "**"
    anchored = "/" in pattern
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("/**", i) and i + 3 == n:  # "dir/**": the folder and all below
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return anchored, re.compile("".join(out))


def _mime_type(name: str, extension: str) -> str:
    if extension in _MIME_OVERRIDES:
        return _MIME_OVERRIDES[extension]
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "text/plain"
