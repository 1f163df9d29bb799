"""Reading an export that is either a folder or a zip file (Slack, Notion): one interface.

    tree = open_export(path)          # ExportTree over a folder or a .zip
    tree.names()                      # POSIX paths of the files, relative to the export root
    tree.read(name, max_bytes)        # bytes; raises SkipEntity when too large or unreadable
    tree.size(name), tree.mtime(name) # bytes; datetime (UTC) or None

A zip made by compressing the export's folder is read from inside that folder when the
source names a file of the export's root (`root_marker`). Members are read in memory, never extracted, so a hostile name
(`../x`) cannot write anywhere; a member that inflates past `max_bytes` is skipped.

`validate_local_path(raw, for_api)` is the config check of every source that reads a path of
this server (exports, mail files, git repositories, SQLite): the path must exist, and API
callers are held to AIRWEAVE_LOCAL_ROOTS like `local_files`. `validate_export_path` adds:
a folder or a zip file.
"""
from __future__ import annotations

import os
import zipfile
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from connectors.base import SkipEntity, SourceError


def validate_local_path(raw: str, *, for_api: bool, field: str = "path") -> Path:
    """The resolved absolute path of an existing file or folder named by a config field.

    API callers must give an absolute path under AIRWEAVE_LOCAL_ROOTS (checked before existence,
    so they cannot probe the rest of the disk). Raises ValueError naming `field`.
    """
    from connectors.sources.local_files import allowed_roots

    raw = (raw or "").strip()
    if not raw:
        raise ValueError(f"config field '{field}' must not be empty")
    try:
        expanded = Path(raw).expanduser()
        if for_api and not expanded.is_absolute():
            raise ValueError(f"config field '{field}' must be an absolute path")
        resolved = expanded.resolve()
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"config field '{field}': cannot resolve {raw!r} ({exc})") from exc
    if for_api and not any(resolved.is_relative_to(root) for root in allowed_roots()):
        raise ValueError(f"config field '{field}': {raw!r} is outside the folders this server allows "
                         "(AIRWEAVE_LOCAL_ROOTS)")
    if not resolved.exists():
        raise ValueError(f"config field '{field}': {raw!r} does not exist")
    return resolved


def validate_export_path(raw: str, *, for_api: bool, field: str = "path") -> str:
    """The resolved absolute path of an export folder or zip. Raises ValueError naming `field`."""
    resolved = validate_local_path(raw, for_api=for_api, field=field)
    if resolved.is_file() and not zipfile.is_zipfile(resolved):
        raise ValueError(f"config field '{field}': {raw!r} is a file but not a zip archive")
    if not (resolved.is_dir() or resolved.is_file()):
        raise ValueError(f"config field '{field}': {raw!r} is neither a folder nor a zip file")
    return str(resolved)


class ExportTree:
    """Files of an export; see the module docstring. Use as a context manager (closes a zip)."""

    def names(self) -> list[str]:
        raise NotImplementedError

    def read(self, name: str, max_bytes: int) -> bytes:
        raise NotImplementedError

    def size(self, name: str) -> int:
        raise NotImplementedError

    def mtime(self, name: str) -> datetime | None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FolderTree(ExportTree):
    def __init__(self, root: Path):
        self.root = root
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            found = []
            for folder, dirs, files in os.walk(self.root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                rel = Path(folder).relative_to(self.root)
                for f in sorted(files):
                    if not f.startswith("."):
                        found.append((rel / f).as_posix())
            self._names = found
        return self._names

    def _path(self, name: str) -> Path:
        return self.root.joinpath(*PurePosixPath(name).parts)

    def read(self, name: str, max_bytes: int) -> bytes:
        path = self._path(name)
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise SkipEntity(f"file too large: {size} bytes > limit {max_bytes} bytes")
            return path.read_bytes()
        except OSError as exc:
            raise SkipEntity(f"unreadable: {exc.strerror or exc}") from exc

    def size(self, name: str) -> int:
        try:
            return self._path(name).stat().st_size
        except OSError:
            return 0

    def mtime(self, name: str) -> datetime | None:
        try:
            return datetime.fromtimestamp(self._path(name).stat().st_mtime, tz=timezone.utc)
        except OSError:
            return None


class ZipTree(ExportTree):
    def __init__(self, path: Path, root_marker: str | None = None):
        try:
            self.zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise SourceError(f"cannot open zip {path}: {exc}", category="config_error") from exc
        infos = [i for i in self.zip.infolist() if not i.is_dir()]
        self.prefix = ""
        if root_marker and not any(i.filename == root_marker for i in infos):
            nested = sorted(i.filename for i in infos if PurePosixPath(i.filename).name == root_marker
                            and len(PurePosixPath(i.filename).parts) == 2)
            if nested:
                self.prefix = nested[0][: -len(root_marker)]
        self.infos = {}
        for info in infos:
            if not info.filename.startswith(self.prefix):
                continue
            name = info.filename[len(self.prefix):]
            parts = PurePosixPath(name).parts
            if not parts or any(p.startswith(".") or p == "__MACOSX" for p in parts):
                continue
            self.infos[name] = info

    def names(self) -> list[str]:
        return sorted(self.infos)

    def read(self, name: str, max_bytes: int) -> bytes:
        info = self.infos[name]
        if info.file_size > max_bytes:
            raise SkipEntity(f"file too large: {info.file_size} bytes > limit {max_bytes} bytes")
        try:
            with self.zip.open(info) as fh:
                data = fh.read(max_bytes + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, NotImplementedError) as exc:
            raise SkipEntity(f"unreadable zip member: {exc}") from exc
        if len(data) > max_bytes:
            raise SkipEntity(f"file too large: {len(data)}+ bytes > limit {max_bytes} bytes")
        return data

    def size(self, name: str) -> int:
        return self.infos[name].file_size

    def mtime(self, name: str) -> datetime | None:
        try:
            return datetime(*self.infos[name].date_time, tzinfo=timezone.utc)
        except (ValueError, TypeError):
            return None

    def close(self) -> None:
        self.zip.close()


def open_export(path: str, root_marker: str | None = None) -> ExportTree:
    """An ExportTree over a folder or a zip file. Raises SourceError(category="config_error").

    `root_marker` names a file of the export's root (Slack: channels.json): in a zip where it
    sits one folder down (a compressed folder), that folder is read as the root.
    """
    p = Path(path or "").expanduser()
    if p.is_dir():
        return FolderTree(p.resolve())
    if p.is_file():
        return ZipTree(p, root_marker)
    raise SourceError(f"export not found: {path}", category="config_error")
