"""Browser tests of the compare view: Playwright driving Debian's Chromium."""

from __future__ import annotations

from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts.demo import load_demo
from transcripts.models import Run, RunRating, RunStatus, Thread

pytestmark = BROWSER_TESTS


def test_a_reader_compares_the_alternatives_and_restores_a_superseded_one(
    browser: Any,
    live_server: Any,
    editor: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    # The original prompt, then the switcher of its three answers leads to the compare view.
    page.locator("article.msg.role-user a.sib-prev").click()
    page.wait_for_selector(".branch-banner")
    page.locator("article.msg.role-assistant .sib-compare").click()
    page.wait_for_selector(".compare-grid")
    assert "/compare/" in page.url
    columns = page.locator(".compare-grid > .col")
    assert columns.count() == 3
    # The original prompt is off the active path: its committed answer leads, an alternative.
    assert columns.nth(0).locator(".status").inner_text().lower() == "alternative"
    # Three unrelated haikus: too different to diff, so they read side by side, unmarked.
    assert page.locator(".compare-grid .too-different").count() == 2
    assert (
        "Too different to diff" in page.locator(".compare-grid .too-different").first.inner_text()
    )
    assert page.locator(".compare-grid del.diff-del").count() == 0
    screenshot(page, "20-compare")
    oldest = Run.objects.filter(thread=thread, fork_from__isnull=False, model="demo-1")
    target = oldest.order_by("id").first()
    assert target is not None and target.status == RunStatus.SUPERSEDED
    column = page.locator(".col", has=page.locator(f"a[href='/runs/{target.id}/']"))
    column.get_by_role("button", name="Make this answer active").click()
    page.wait_for_selector(".flash")
    assert "Restored" in page.locator("#compare .flash").inner_text()
    first = page.locator(".compare-grid > .col").nth(0)
    assert first.locator(f"a[href='/runs/{target.id}/']").count() == 1
    assert first.locator(".status").inner_text().lower() == "active"
    assert Run.objects.get(pk=target.pk).status == RunStatus.COMMITTED
    # Mark it preferred with a note; the mark shows in the column and in the thread list.
    first.locator("summary", has_text="Prefer").click()
    first.locator("textarea[name=note]").fill("the most vivid one")
    first.get_by_role("button", name="Mark as preferred").click()
    page.wait_for_selector(".compare-grid > .col >> text=★ Your preferred")
    assert "the most vivid one" in page.locator(".compare-grid > .col").nth(0).inner_text()
    assert RunRating.objects.get(run=target).note == "the most vivid one"
    screenshot(page, "21-compare-restored-preferred")
    page.goto(live_server.url + "/")
    assert page.locator(".thread-row .tag-pref").inner_text() == "★ 1 preferred"


def test_the_compare_view_becomes_tabs_on_a_narrow_screen(
    browser: Any,
    live_server: Any,
    editor: Any,
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    prompt = Run.objects.filter(thread=thread).order_by("id").first()
    assert prompt is not None
    fork = prompt.messages.get()
    page = open_page(
        browser, live_server, editor, viewport={"width": 360, "height": 780}, color_scheme="dark"
    )
    page.goto(f"{live_server.url}/t/{thread.id}/fork/{fork.id}/compare/")
    columns = page.locator(".compare-grid > .col")
    assert [columns.nth(i).is_visible() for i in range(3)] == [True, False, False]
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "22-compare-narrow-tab-1")
    page.locator(".tab-bar label[for=tab-3]").click()
    assert [columns.nth(i).is_visible() for i in range(3)] == [False, False, True]
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "23-compare-narrow-tab-3")
