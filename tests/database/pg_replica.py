"""A real primary and a real streaming replica from the embedded server's own binaries.

Both listen on Unix sockets only, in a throwaway folder. The primary runs with
`wal_level = replica` and a physical replication slot (so the replica never misses WAL it has
not fetched); `pg_basebackup -R` copies it and writes `primary_conninfo`, `primary_slot_name`
and `standby.signal`, so the copy starts as a hot standby streaming from the primary.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from airweave.embedded_db import bin_dir
from tests.database import pg_single


class Cluster:
    """A primary (`primary_socket`) and one streaming replica (`replica_socket`) under `folder`."""

    def __init__(self):
        self.bin = bin_dir()
        self.folder = pg_single.scratch_folder()
        self.primary_data = self.folder / "primary"
        self.replica_data = self.folder / "replica"
        self.primary_socket = self._socket_dir("p")
        self.replica_socket = self._socket_dir("r")

    def _socket_dir(self, name: str) -> Path:
        path = self.folder / name
        path.mkdir(mode=0o755)
        if (user := pg_single.server_user()) is not None:
            shutil.chown(path, user=user, group=user)
        return path

    def start(self) -> "Cluster":
        """initdb the primary, start it, copy it with pg_basebackup -R and start the replica."""
        pg_single.initdb(self.bin, self.primary_data, [])
        with open(self.primary_data / "postgresql.conf", "a") as conf:
            conf.write("\nwal_level = replica\nmax_wal_senders = 4\nmax_replication_slots = 4\n"
                       "listen_addresses = ''\nfsync = off\nsynchronous_commit = off\nshared_buffers = 32MB\n")
        self._ctl(self.primary_data, self.primary_socket, "start")
        self._run("pg_basebackup", "-D", str(self.replica_data), "-h", str(self.primary_socket), "-U", "postgres",
                  "-R", "-X", "stream", "-C", "-S", "replica_1", "--no-sync")
        self.start_replica()
        return self

    def start_replica(self) -> None:
        self._ctl(self.replica_data, self.replica_socket, "start")

    def stop_replica(self) -> None:
        self._ctl(self.replica_data, self.replica_socket, "stop")

    def stop(self) -> None:
        """Stop both servers (whatever state they are in) and remove the folder."""
        for data, socket in ((self.replica_data, self.replica_socket), (self.primary_data, self.primary_socket)):
            if (data / "postmaster.pid").exists():
                self._ctl(data, socket, "stop", check=False)
        shutil.rmtree(self.folder, ignore_errors=True)

    def wait_for_replica(self, timeout: float = 60) -> None:
        """Until the replica accepts connections (a hot standby does once it reached consistency)."""
        deadline = time.monotonic() + timeout
        while True:
            done = pg_single.run([str(self.bin / "pg_isready"), "-h", str(self.replica_socket), "-U", "postgres"])
            if done.returncode == 0:
                return
            assert time.monotonic() < deadline, done.stdout + done.stderr
            time.sleep(0.2)

    def _ctl(self, data: Path, socket: Path, action: str, check: bool = True) -> None:
        options = ["-o", f"-k {socket} -c listen_addresses=''"] if action == "start" else ["-m", "fast"]
        self._run("pg_ctl", "-w", "-D", str(data), "-l", str(data.parent / f"{data.name}.log"), *options, action,
                  check=check)

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        done = pg_single.run([str(self.bin / program), *args], timeout=120)
        if check:
            log = ""
            for data in (self.primary_data, self.replica_data):
                path = data.parent / f"{data.name}.log"
                log += path.read_text(errors="replace")[-2000:] if path.exists() else ""
            assert done.returncode == 0, f"{program} {' '.join(args)}: {done.stdout}{done.stderr}{log}"
