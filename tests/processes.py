"""Real processes of the product started by tests: daphne, `manage.py` commands, the worker."""
from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest
from django.conf import settings

from tests.providers.vendor_server import provider_env_names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def subprocess_env(**extra) -> dict:
    """The environment of a server or command started by a test: the test database, no provider key."""
    env = {k: v for k, v in os.environ.items() if k not in provider_env_names()}
    env.update(DJANGO_SETTINGS_MODULE="airweave.settings", AIRWEAVE_WARM_UP="0",
               AIRWEAVE_DATABASE_NAME=settings.DATABASES["default"]["NAME"])
    env.pop("REDIS_URL", None)  # the machine's own Redis is not the test's, unless a test passes one
    env.update(extra)
    return env


def manage(*args: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    """Run `manage.py *args` on the test database; the CompletedProcess (text output)."""
    return subprocess.run([sys.executable, str(settings.BASE_DIR / "manage.py"), *args], cwd=settings.BASE_DIR,
                          env=subprocess_env(**env), capture_output=True, text=True, timeout=timeout)


class Background:
    """A long-running process whose output goes to a temporary file (an unread pipe could block it).

    It leads its own process group, so `stop` reaches the children it forked too (qcluster's
    workers), and whatever a failing test left running is stopped when pytest exits.
    """

    running: set["Background"] = set()

    def __init__(self, argv: list[str], **env):
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(argv, cwd=settings.BASE_DIR, env=subprocess_env(**env),
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        Background.running.add(self)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> str:
        """Terminate it, let it stop its children for 5 s, then kill what is left of its process
        group; returns everything it printed."""
        Background.running.discard(self)
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._signal_group(signal.SIGKILL)  # children that outlived their parent's shutdown
        self.process.wait(5)
        text = self.output()
        self.log.close()
        return text

    def _signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass


@atexit.register
def _stop_leftovers() -> None:
    for background in list(Background.running):
        background.stop()


def start_daphne(**env) -> tuple[Background, str]:
    """A daphne server of the whole ASGI application on a free port: (process, base URL)."""
    port = free_port()
    server = Background([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                         "airweave.asgi:application"], **env)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server, f"http://127.0.0.1:{port}"
        except OSError:
            if server.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(server.stop()[-3000:])
            time.sleep(0.2)


def start_worker(**env) -> Background:
    """A `manage.py qcluster` on the test database."""
    return Background([sys.executable, str(settings.BASE_DIR / "manage.py"), "qcluster"], **env)
