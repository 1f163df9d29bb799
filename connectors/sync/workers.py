"""Which process runs a sync job, and whether that process still lives.

A running job records its worker: the host (name and pid namespace), the pid and the process's
start time (seconds since the epoch, as psutil reports it). On the same host, a job whose process is gone (killed,
crashed, the machine's OOM killer) — or whose pid now belongs to another process started later —
has lost its worker for certain, and the sweeper fails it at once. A job of another host cannot
be checked from here; the sweeper's time window (AIRWEAVE_STUCK_JOB_MINUTES) covers it.
"""
from __future__ import annotations

import os
import socket
from functools import lru_cache

import psutil

# psutil's create_time is rounded differently across reads; a start time this close is the same process.
START_TIME_TOLERANCE_SECONDS = 1.0


@lru_cache(maxsize=1)
def this_host() -> str:
    """This machine as the sweeper tells machines apart: the host name and, on Linux, the pid
    namespace (two containers given the same host name do not see each other's pids)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}/pidns:{namespace}"


def current_worker() -> dict:
    """{worker_host, worker_pid, worker_started} of this process, the fields of SyncJob."""
    pid = os.getpid()
    return {"worker_host": this_host(), "worker_pid": pid, "worker_started": psutil.Process(pid).create_time()}


def worker_is_gone(*, host: str, pid: int | None, started: float | None) -> bool:
    """True when the worker (host, pid, start time) is known to be dead: it ran on this host and no
    process with that pid and start time exists. False when it lives or cannot be checked from here
    (another host, nothing recorded)."""
    if not host or pid is None or host != this_host():
        return False
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return True
        created = process.create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # AccessDenied and the like: it exists
        return False
    return started is not None and abs(created - started) > START_TIME_TOLERANCE_SECONDS
