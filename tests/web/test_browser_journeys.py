"""Journeys in a real browser (Debian's chromium through Playwright) against a real daphne and a real
worker: sign-up to a cited answer over the user's own folder; another organization's 404s; what a
member sees. Each journey saves screenshots under docs/screenshots/ and checks every page with axe-core."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.web.browser import (
    assert_accessible, chromium_page, copy_handbook, live_product, log_in, needs_chromium, screenshot, sign_up,
)


@pytest.fixture
def browser_env(transactional_db, monkeypatch):
    """Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are safe."""
    needs_chromium()
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_sign_up_to_a_cited_answer_over_my_folder(browser_env, tmp_path):
    folder = copy_handbook(tmp_path / "travel-and-leave")
    with live_product(tmp_path) as (server, url, worker), chromium_page() as page:
        page.goto(f"{url}/")
        assert "/accounts/login/" in page.url  # / → /ui/ → log in first
        sign_up(page, url, server, "ada@example.com", check=assert_accessible)
        assert_accessible(page)  # the empty dashboard

        # Create a collection; the readable id is suggested from the name.
        page.click("text=New collection")
        page.wait_for_load_state("load")
        page.fill("#id_name", "Travel and leave")
        expect(page.locator("#id_readable_id")).to_have_attribute("placeholder", "travel-and-leave")
        assert_accessible(page)
        page.click("text=Create collection")
        page.wait_for_url(re.compile(r".*/ui/collections/travel-and-leave/(#.*)?$"))

        # Add a local_files source for the folder: catalog → generated form → the first sync starts.
        page.click("text=Add source")
        page.fill("#source-q", "local")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert_accessible(page)
        page.click("h2 >> text=Local Files")
        page.fill("#id_config_path", str(folder))
        assert_accessible(page)
        page.click("text=Connect and start the first sync")
        page.wait_for_url(re.compile(r".*/ui/collections/travel-and-leave/#connection-.*"))

        # The counters move and the sync finishes without a reload (a marker survives on the window).
        page.evaluate("window.__noReload = true")
        page.wait_for_function("Number(document.querySelector('[data-counter=inserted]').textContent) > 0",
                               timeout=180_000)
        screenshot(page, "collection-during-sync")
        page.wait_for_selector("[data-job-status].completed", timeout=180_000)
        assert page.evaluate("window.__noReload === true")
        inserted = int(page.inner_text("[data-counter=inserted]"))
        assert inserted >= 20, inserted
        assert_accessible(page)

        # The jobs page shows the stage timings.
        page.click("text=All jobs")
        assert "embedding" in page.inner_text("table") and "completed" in page.inner_text("table")
        assert_accessible(page)
        page.go_back()

        # Search in the playground with the keyboard alone: the timeline, the streamed answer, a citation.
        page.click("text=Search playground")
        page.focus("#q")
        page.keyboard.type("How do I request leave?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#timeline li.done", timeout=60_000)
        page.wait_for_selector("#results article.result")
        page.wait_for_selector("#answer a.cite", timeout=60_000)
        timeline = page.inner_text("#timeline")
        assert "retrieval" in timeline and " ms" in timeline and "embed_query" in timeline
        assert "keyword rank" in page.inner_text("#result-1")
        page.evaluate("document.getElementById('timeline').scrollIntoView()")  # the answer, not the form
        screenshot(page, "playground-answer")
        cite = page.locator("#answer a.cite").first
        number = cite.get_attribute("data-cite")
        cite.click()
        page.wait_for_selector(f"#result-{number}.highlight")
        page.click("#show-code summary")
        assert "/collections/travel-and-leave/search" in page.inner_text("#code-curl")
        assert_accessible(page)

        # Open the cited entity in the explorer, with the keyboard.
        page.focus(f"#result-{number} header a")
        page.keyboard.press("Enter")
        page.wait_for_selector("#chunks-h")
        assert "Who may see it" in page.inner_text("main")
        assert_accessible(page)
        page.click("nav[aria-label=Breadcrumb] >> text=Entities")
        assert_accessible(page)

        page.goto(f"{url}/ui/")
        assert "Travel and leave" in page.inner_text("main")
        screenshot(page, "dashboard", full_page=True)
        assert_accessible(page)
        page.goto(f"{url}/accounts/api-keys")
        assert_accessible(page)
        page.goto(f"{url}/accounts/organization/members")
        assert_accessible(page)


@pytest.mark.slow
def test_another_organization_gets_404_and_a_member_sees_only_what_they_may(browser_env, tmp_path, settings):
    from airweave.collections.services import collection_create
    from airweave.tenancy.models import Membership, User
    from airweave.tenancy.services import organization_create
    from connectors.sync.push import PushDocument, documents_push

    # The server checks passwords with the production hashers (the test settings hash with MD5).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    owner = User.objects.create_user("owner@team.example", "correct-horse-battery-7")
    team = organization_create(name="Team", owner=owner)
    member = User.objects.create_user("member@team.example", "correct-horse-battery-7")
    Membership.objects.create(user=member, organization=team, role="member")
    stranger = User.objects.create_user("eve@elsewhere.example", "correct-horse-battery-7")
    organization_create(name="Elsewhere", owner=stranger)
    collection = collection_create(organization=team, name="Payroll notes", readable_id="payroll")
    documents_push(collection=collection, delete_ids=[], documents=[
        PushDocument(id="calendar", name="Payroll calendar", text="Payroll runs on the last Friday of the month."),
        PushDocument(id="salaries", name="Salary bands", text="Payroll salary bands for engineers, confidential.",
                     viewers=["user:owner@team.example"], is_public=False),
    ])
    secret = collection.entities.get(entity_id="salaries")
    paths = ["/ui/collections/payroll/", "/ui/collections/payroll/search", "/ui/collections/payroll/entities/",
             f"/ui/collections/payroll/entities/{secret.pk}/", "/ui/collections/payroll/sources/"]
    with live_product(tmp_path, AIRWEAVE_EMAIL_VERIFICATION="none") as (server, url, worker), chromium_page() as page:
        log_in(page, url, "eve@elsewhere.example")
        for path in paths:
            assert page.goto(url + path).status == 404, path
        page.goto(f"{url}/ui/")
        page.click("text=Log out")

        log_in(page, url, "member@team.example")
        page.goto(f"{url}/ui/collections/payroll/search")
        page.fill("#q", "payroll salary bands")
        page.select_option("#tier", "instant")
        page.keyboard.press("Enter")
        page.wait_for_selector("#results article.result")
        shown = page.inner_text("#results")
        assert "Payroll calendar" in shown and "Salary bands" not in shown
        screenshot(page, "member-search")
        assert_accessible(page)
        assert page.goto(url + f"/ui/collections/payroll/entities/{secret.pk}/").status == 404
        page.goto(f"{url}/ui/")
        page.click("text=Log out")

        log_in(page, url, "owner@team.example")
        page.goto(f"{url}/ui/collections/payroll/search")
        page.fill("#q", "payroll salary bands")
        page.select_option("#tier", "instant")
        page.keyboard.press("Enter")
        page.wait_for_selector("#results article.result")
        assert "Salary bands" in page.inner_text("#results")
        page.select_option("#as-member", label="member@team.example (member)")
        page.click("#run-search")
        page.wait_for_function("!document.querySelector('#results').innerText.includes('Salary bands')"
                               " && document.querySelectorAll('#results article.result').length > 0")
        assert_accessible(page)
