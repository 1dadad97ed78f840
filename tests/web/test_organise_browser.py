"""Organising threads in Chromium: rename, tag, pin, archive and delete by clicking and by
keyboard, and a bulk archive of three threads (plain forms, under the strict CSP)."""

from __future__ import annotations

from typing import Any

from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_thread
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import AuditRecord, Thread, ThreadPin

pytestmark = BROWSER_TESTS
TITLES = ("Alpha plan", "Beta notes", "Gamma trace", "Delta run")


def _setup(browser: Any, live_server: Any) -> tuple[Any, dict[str, Thread], list[str]]:
    """Four threads of the default project and a page of its admin on the list."""
    admin = make_user("organiser")
    set_member(project=default_project(), user=admin, role="admin")
    threads = {title: make_thread(title, project=default_project()) for title in TITLES}
    ask(threads["Delta run"], "hello")
    page = open_page(browser, live_server, admin)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/")
    return page, threads, errors


def _row(page: Any, title: str) -> Any:
    return page.locator(".thread-row", has=page.locator("a.thread-title", has_text=title))


def _listed(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("a.thread-title").all_inner_texts()]


def test_rename_tag_pin_archive_and_delete_by_clicking(browser: Any, live_server: Any) -> None:
    page, threads, errors = _setup(browser, live_server)

    row = _row(page, "Alpha plan")
    row.locator("details.org-menu > summary").click()
    row.locator("input[name=title]").fill("Alpha plan, renamed")
    row.get_by_role("button", name="Rename").click()
    page.wait_for_selector("text=Renamed to")
    row = _row(page, "Alpha plan, renamed")
    row.locator("details.org-menu > summary").click()
    row.locator("input[name=add]").fill("eval")
    row.get_by_role("button", name="Add").click()
    page.wait_for_selector(".thread-row a.chip:text('eval')")
    _row(page, "Beta notes").locator("details.org-menu > summary").click()
    _row(page, "Beta notes").get_by_role("button", name="Pin to the top").click()
    page.wait_for_selector("text=Pinned.")
    assert _listed(page)[0] == "Beta notes"
    screenshot(page, "organise-list", full_page=False)
    _row(page, "Gamma trace").locator("details.org-menu > summary").click()
    _row(page, "Gamma trace").get_by_role("button", name="Archive").click()
    page.wait_for_selector("text=Archived.")
    assert "Gamma trace" not in _listed(page)

    page.goto(f"{live_server.url}/t/{threads['Delta run'].id}/")
    page.locator(".org-head details.org-menu > summary").click()
    page.get_by_role("link", name="Delete…").click()
    assert "1 message" in page.locator("main").inner_text()
    page.get_by_role("button", name="Delete thread").click()
    page.wait_for_selector("text=Deleted")
    assert "Delta run" not in _listed(page)

    assert not Thread.objects.filter(pk=threads["Delta run"].id).exists()
    assert Thread.objects.get(pk=threads["Gamma trace"].id).archived
    assert Thread.objects.get(pk=threads["Alpha plan"].id).tag_names == ["eval"]
    assert ThreadPin.objects.filter(thread_id=threads["Beta notes"].id).exists()
    actions = set(AuditRecord.objects.values_list("action", flat=True))
    assert {"rename", "retag", "pin", "archive", "delete"} <= actions
    assert errors == []


def test_the_menus_work_by_keyboard(browser: Any, live_server: Any) -> None:
    page, threads, errors = _setup(browser, live_server)

    _row(page, "Alpha plan").locator("details.org-menu > summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # Pin to the top
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Pinned.")
    _row(page, "Beta notes").locator("details.org-menu > summary").focus()
    page.keyboard.press("Enter")
    for _ in range(3):  # Pin, Archive, the title field
        page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type("Beta by keyboard")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Renamed to")

    page.goto(f"{live_server.url}/t/{threads['Gamma trace'].id}/")
    page.locator(".org-head details.org-menu > summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # Pin
    page.keyboard.press("Tab")  # Archive
    page.keyboard.press("Enter")
    page.wait_for_selector(".thread-head .tag:text('archived')")

    assert _listed_after(page, live_server)[0] == "Alpha plan"
    assert Thread.objects.get(pk=threads["Beta notes"].id).title == "Beta by keyboard"
    assert Thread.objects.get(pk=threads["Gamma trace"].id).archived
    assert errors == []


def _listed_after(page: Any, live_server: Any) -> list[str]:
    page.goto(f"{live_server.url}/")
    return _listed(page)


def test_a_bulk_archive_of_three_threads(browser: Any, live_server: Any) -> None:
    page, _threads, errors = _setup(browser, live_server)

    for title in TITLES[:2]:
        _row(page, title).locator("input.org-check").check()
    _row(page, TITLES[2]).locator("input.org-check").focus()
    page.keyboard.press("Space")  # the third by keyboard
    page.select_option("#bulk-action", "archive")
    page.locator("#bulk").get_by_role("button", name="Apply").click()
    page.wait_for_selector("text=Archived 3 of 3 threads.")

    assert _listed(page) == ["Delta run"]
    archived = Thread.objects.filter(archived=True).values_list("title", flat=True)
    assert set(archived) == set(TITLES[:3])
    assert errors == []
