"""Run the embedded server's own binaries in a throwaway data folder, optionally under QEMU.

`postgres --single` runs in one process (it forks no backends), so under `qemu-x86_64` every
instruction of the server and of the pgvector library it loads is emulated for the CPU model
asked for; `-cpu Haswell` has AVX2 but no AVX-512.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from airweave.embedded_db import server_user


def scratch_folder() -> Path:
    """A new folder under the system temp dir that the server's user may write to."""
    folder = Path(tempfile.mkdtemp(prefix="airweave-pg-"))
    folder.chmod(0o755)
    if (user := server_user()) is not None:
        shutil.chown(folder, user=user, group=user)
    return folder


def run(argv: list[str], *, stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `argv` as the server's user; returns the CompletedProcess (stdout and stderr as text)."""
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout,
                          user=server_user(), cwd="/", env={**os.environ, "LC_ALL": "C"})


def initdb(bin_dir: Path, pgdata: Path, prefix: list[str]) -> None:
    done = run([*prefix, str(bin_dir / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                "--encoding=utf8", "--no-sync"])
    assert done.returncode == 0, done.stdout + done.stderr


def single_user(bin_dir: Path, pgdata: Path, statements: list[str], prefix: list[str]) -> subprocess.CompletedProcess:
    """Feed `statements` to `postgres --single` (one per command, `-j` mode) and return the run."""
    script = "".join(f"{sql.strip().rstrip(';')};\n\n" for sql in statements)
    return run([*prefix, str(bin_dir / "postgres"), "--single", "-j", "-D", str(pgdata),
                "-c", "exit_on_error=true", "postgres"], stdin=script)
