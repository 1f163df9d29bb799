"""`manage.py startsource NAME` writes a source and its test that pass as generated.

The command runs in a subprocess against a shadow copy of the checkout (a temporary folder of
symbolic links to this one, with real folders for `connectors/sources` and `tests/connectors`,
so the generated files land there and nowhere else); the generated test then runs under pytest
in that copy, on a database of its own (AIRWEAVE_TEST_DB_NAME), as a developer would run it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.conftest import PROJECT_DIR

SHADOWED = {Path("connectors"), Path("connectors/sources"), Path("tests"), Path("tests/connectors")}
# Copied, not linked: Python puts a script's folder on sys.path with symbolic links resolved.
COPIED = {Path("manage.py")}


def shadow(src: Path, dst: Path, relative: Path = Path()) -> None:
    """Make `dst` a copy of `src` built of symbolic links, with real folders for SHADOWED."""
    dst.mkdir(exist_ok=True)
    for entry in sorted(src.iterdir()):
        if entry.name in (".git", ".data", "__pycache__", ".pytest_cache"):
            continue
        if relative / entry.name in SHADOWED:
            shadow(entry, dst / entry.name, relative / entry.name)
        elif relative / entry.name in COPIED:
            shutil.copy2(entry, dst / entry.name)
        else:
            (dst / entry.name).symlink_to(entry)


@pytest.mark.parametrize("name", ["Acme", "1acme", "acme-wiki", "class", "_private", "linear"])
def test_names_that_are_not_a_new_short_name_are_refused(name, tmp_path):
    with pytest.raises(CommandError):
        call_command("startsource", name, project_dir=str(tmp_path))


def generate(tmp_path) -> tuple[Path, dict]:
    """A shadow checkout with `startsource harbour_notes` run in it; returns (its folder, the env to use)."""
    copy = tmp_path / "checkout"
    shadow(PROJECT_DIR, copy)
    env = {**os.environ, "AIRWEAVE_TEST_DB_NAME": f"test_airweave_startsource_{os.getpid()}"}
    made = subprocess.run([sys.executable, "manage.py", "startsource", "harbour_notes"], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    return copy, env


def run_generated_test(copy: Path, env: dict, *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "pytest", "tests/connectors/test_harbour_notes.py", "-q",
                          "-p", "no:cacheprovider", *args], cwd=copy, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return run.stdout


def test_the_generated_files_land_in_the_checkout_and_their_database_free_tests_pass(tmp_path):
    copy, env = generate(tmp_path)
    source, test = copy / "connectors/sources/harbour_notes.py", copy / "tests/connectors/test_harbour_notes.py"
    assert source.is_file() and not source.is_symlink() and test.is_file()
    assert not (PROJECT_DIR / "connectors/sources/harbour_notes.py").exists()
    assert '"""Harbour Notes: the items of a Harbour Notes space.' in source.read_text()
    with pytest.raises(CommandError, match="not overwriting"):
        call_command("startsource", "harbour_notes", project_dir=str(copy))
    # The tests that need no database (a database of its own costs the child its migrations).
    assert "2 passed" in run_generated_test(copy, env, "-k", "one_page or 429")


@pytest.mark.slow
def test_the_whole_generated_test_passes_as_generated(tmp_path):
    copy, env = generate(tmp_path)
    assert "4 passed" in run_generated_test(copy, env, "--create-db")
