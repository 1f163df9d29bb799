"""Airweave's CLI (airweave-cli 0.1.15), unmodified, as a subprocess against the live server: log in
with an API key (its interactive prompts, answered through a pseudo-terminal), list and create
collections, add a source with direct credentials, sync it, and search with each tier, a
retrieval strategy, thinking and a filter. Commands after the login read ~/.airweave/config.json
(HOME is a temporary folder) and print JSON, as they do when piped.
"""
from __future__ import annotations

import json
import os
import re
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.compat.sdk import CLI_VERSION, load_sdk, wait_for_job

pytestmark = pytest.mark.django_db
CLI = str(Path(sys.executable).parent / "airweave")
NON_INTERACTIVE_MARKERS = ("CI", "GITHUB_ACTIONS")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-home")


def cli_env(home: Path) -> dict:
    # The CLI turns its prompts off under CI=true or GITHUB_ACTIONS (airweave_cli/lib/tty.py); these tests
    # play a person at a terminal, so a CI runner's markers are not theirs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWEAVE_") and k not in NON_INTERACTIVE_MARKERS}
    env.update(HOME=str(home), TERM="xterm", COLUMNS="120", PYTHONIOENCODING="utf-8")
    return env


def run_cli(home: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """`airweave *args` with pipes (JSON output); run from /tmp so the SDK's `airweave` package is imported,
    not this project's."""
    return subprocess.run([CLI, *args], env=cli_env(home), cwd="/tmp", capture_output=True, text=True, timeout=timeout)


def json_of(result: subprocess.CompletedProcess):
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    return json.loads(result.stdout)


def interactive(home: Path, args: list[str], answers: list[tuple[str, str]], timeout: float = 60) -> str:
    """Run the CLI on a pseudo-terminal; each (prompt, answer) types `answer` once `prompt` appears.
    Returns everything it printed."""
    main, child = pty.openpty()
    process = subprocess.Popen([CLI, *args], env=cli_env(home), cwd="/tmp", stdin=child, stdout=child, stderr=child,
                               close_fds=True)
    os.close(child)
    seen, pending = b"", list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(main, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
                if b"\x1b[6n" in chunk:  # prompt_toolkit asks where the cursor is: answer like a terminal
                    os.write(main, b"\x1b[1;1R")
            if pending and pending[0][0].encode() in seen:
                os.write(main, pending.pop(0)[1].encode() + b"\r")
            if process.poll() is not None and not ready:
                break
        assert process.wait(timeout=max(1, deadline - time.monotonic())) == 0, seen.decode(errors="replace")[-3000:]
        assert not pending, f"never prompted for {pending}: {seen.decode(errors='replace')[-2000:]}"
        return seen.decode(errors="replace")
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)


def test_the_cli_from_login_to_search(live, home):
    version = subprocess.run([CLI, "--version"], capture_output=True, text=True, cwd="/tmp", env=cli_env(home))
    assert version.stdout.strip() == f"airweave-cli {CLI_VERSION}"

    printed = interactive(home, ["auth", "login", "--api-key"], [
        ("Enter your API key", live.key), ("Base URL", live.url), ("Default collection", "cli-handbook")])
    assert "Credentials valid" in printed and "Config saved" in printed
    config = json.loads((home / ".airweave" / "config.json").read_text())
    assert config == {"api_key": live.key, "base_url": live.url, "collection": "cli-handbook"}
    status = run_cli(home, "auth", "status")
    assert status.returncode == 0 and live.url in status.stdout, (status.stdout, status.stderr)

    created = json_of(run_cli(home, "collections", "create", "--name", "CLI handbook", "--readable-id", "cli-handbook"))
    assert created["readable_id"] == "cli-handbook" and created["vector_size"] == 384
    listed = json_of(run_cli(home, "collections", "list"))
    assert "cli-handbook" in [c["readable_id"] for c in listed]
    assert json_of(run_cli(home, "collections", "get", "cli-handbook"))["name"] == "CLI handbook"

    added = json_of(run_cli(home, "sources", "add", "local_files", "--name", "Handbook", "--credentials", "{}",
                            "--config", json.dumps({"path": str(live.root / "handbook")}), "--no-sync"))
    assert added["short_name"] == "local_files" and added["auth"]["method"] == "direct"
    assert added["status"] == "pending_sync"
    connections = json_of(run_cli(home, "sources", "list"))
    assert [(c["id"], c["short_name"]) for c in connections] == [(added["id"], "local_files")]
    job = json_of(run_cli(home, "sources", "sync", added["id"]))
    assert job["status"] in ("pending", "running", "completed") and job["source_connection_id"] == added["id"]
    sdk = load_sdk()
    finished = wait_for_job(sdk.AirweaveSDK(base_url=live.url, api_key=live.key), added["id"])
    assert finished.id == job["id"] and finished.status == "completed" and finished.entities_inserted == 3

    question = "How do I request annual leave?"
    for args in (["--mode", "instant"], ["--mode", "instant", "--strategy", "neural"],
                 ["--mode", "instant", "--strategy", "keyword"], ["--mode", "classic"], []):
        results = json_of(run_cli(home, "search", question, *args, "--top-k", "2"))["results"]
        assert results[0]["name"] == "Requesting leave", args
        assert len(results) <= 2
    only_it = json.dumps({"conditions": [{"field": "breadcrumbs.name", "operator": "equals", "value": "it"}]})
    filtered = json_of(run_cli(home, "search", "lost laptop", "--mode", "instant", "--filter", only_it))["results"]
    assert [r["name"] for r in filtered] == ["Laptops"]
    agentic = json_of(run_cli(home, "search", "travel receipts", "--mode", "agentic", "--thinking"))["results"]
    assert agentic[0]["name"] == "Travel"


def test_the_agentic_stream_renders_its_steps_in_a_terminal(live, home):
    """On a terminal the CLI renders each agentic event; with the SDK's shapes it names the tool."""
    printed = interactive(home, ["search", "travel receipts", "--mode", "agentic", "--thinking", "-c", "cli-handbook"],
                          [])
    printed = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", printed)  # the terminal's colours
    assert "Search started" in printed and "Thinking (iter 1)" in printed
    assert "Tool: search (iter 1)" in printed and "Done" in printed
    assert "unknown" not in printed and "Travel" in printed
