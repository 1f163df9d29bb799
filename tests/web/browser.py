"""Helpers of the browser journeys: Debian's chromium driven by Playwright, a real daphne and a
real worker on the test database, axe-core injected into each page."""
from __future__ import annotations

import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.processes import start_daphne, start_worker

CHROMIUM = os.environ.get("AIRWEAVE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
AXE = Path(__file__).with_name("vendor") / "axe.min.js"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
HANDBOOK = Path(__file__).resolve().parents[3] / "shared" / "data" / "docs_18f_handbook" / "pages" / "travel-and-leave"
PASSWORD = "correct-horse-battery-7"


def needs_chromium():
    """Skip (with the way out) when Debian's chromium is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium (.ci/run does)")


@contextmanager
def chromium_page(width: int = 1280, height: int = 900):
    """A fresh page of a headless chromium (Playwright with executable_path; never a downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def axe_violations(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is now: [{id, impact, help, nodes}]."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ["violations"]});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
    }""")
    return [v for v in found if v["impact"] in ("serious", "critical")]


def assert_accessible(page) -> None:
    """No serious or critical axe-core violation on the current page."""
    violations = axe_violations(page)
    assert not violations, f"{page.url}: {violations}"


def screenshot(page, name: str, full_page: bool = False) -> None:
    """Save a screenshot of the viewport (or the whole page) under docs/screenshots/ (the README shows some)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


def wait_for_output(process, pattern: str, timeout: float = 30) -> re.Match:
    """Wait until `process` (a tests.processes.Background) printed something matching `pattern`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(pattern, process.output())
        if match:
            return match
        time.sleep(0.2)
    raise AssertionError(f"never printed {pattern!r}:\n{process.output()[-3000:]}")


def copy_handbook(target: Path) -> Path:
    """A folder of real documents: the 18F handbook's travel-and-leave pages (22 Markdown files)."""
    if not HANDBOOK.is_dir():
        pytest.skip(f"{HANDBOOK} is missing")
    shutil.copytree(HANDBOOK, target)
    return target


@contextmanager
def live_product(tmp_path, **env):
    """A daphne server and a worker on the test database: yields (server, base URL, worker)."""
    environment = {"EMAIL_URL": "consolemail://", "AIRWEAVE_LOCAL_ROOTS": str(tmp_path),
                   "AIRWEAVE_EMBEDDING_BATCH_SIZE": "4", "AIRWEAVE_WARM_UP": "1", **env}
    server, url = start_daphne(**environment)
    worker = start_worker(**environment)
    try:
        yield server, url, worker
    finally:
        worker_log = worker.stop()
        server_log = server.stop()
        assert "Traceback" not in server_log, server_log[server_log.find("Traceback") - 500:][:5000]
        assert "Traceback" not in worker_log, worker_log[worker_log.find("Traceback") - 500:][:5000]


def sign_up(page, url: str, server, email: str, check=None) -> None:
    """Sign up, follow the verification link printed by the console mail backend, log in.

    `check(page)` runs on the sign-up page and on the login page (e.g. assert_accessible)."""
    page.goto(f"{url}/accounts/signup/")
    if check:
        check(page)
    page.fill("input[name=email]", email)
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    link = wait_for_output(server, r"http://127\.0\.0\.1:\d+/accounts/confirm-email/[^\s]+/").group(0)
    page.goto(link)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    log_in(page, url, email, check)


def log_in(page, url: str, email: str, check=None) -> None:
    """Log in at /accounts/login/; lands on the dashboard."""
    page.goto(f"{url}/accounts/login/")
    if check:
        check(page)
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    try:
        page.wait_for_url(f"{url}/ui/")
    except Exception as exc:
        raise AssertionError(f"login of {email} landed on {page.url}: {page.inner_text('main')[:1000]}") from exc
