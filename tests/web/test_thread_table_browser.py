"""Browser test of the thread table: sort by a header, load more rows, switch density, by
keyboard (Playwright with Debian's Chromium)."""

from __future__ import annotations

from typing import Any

from tests.base import Team
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import make_thread
from transcripts.models import Thread

pytestmark = BROWSER_TESTS


def test_a_header_sorts_load_more_appends_rows_and_density_is_kept(
    browser: Any, live_server: Any, team: Team
) -> None:
    for n in range(30):
        thread = make_thread(f"Row {n:02d}", project=team.alpha)
        Thread.objects.filter(pk=thread.pk).update(message_count=n)
    page = open_page(browser, live_server, team.viewer)
    page.goto(live_server.url + "/")
    header = page.get_by_role("link", name="Messages")
    header.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**sort=messages**")
    titles = page.locator(".thread-title")
    assert titles.first.inner_text() == "Row 29"
    assert page.locator("th[aria-sort]").get_attribute("aria-sort") == "descending"
    page.get_by_role("link", name="Load more").click()
    page.wait_for_function("document.querySelectorAll('.thread-row').length === 30")
    texts = titles.all_inner_texts()
    assert texts == [f"Row {n:02d}" for n in range(29, -1, -1)]
    page.get_by_role("link", name="Messages").click()  # the other way round
    page.wait_for_url("**sort=messages_asc**")
    assert titles.first.inner_text() == "Row 00"
    page.get_by_role("link", name="Compact").click()
    page.wait_for_selector(".thread-table.density-compact")
    page.goto(live_server.url + "/")
    assert page.locator(".thread-table.density-compact").count() == 1
    screenshot(page, "70-thread-table-compact", full_page=False)
