"""New thread from here, in Chromium: chosen in a message's More actions menu (by mouse and by
keyboard), it opens the new thread, whose header links back to the message it came from."""

from __future__ import annotations

from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts import selectors
from transcripts.demo import load_demo
from transcripts.models import Thread

pytestmark = BROWSER_TESTS


def test_the_menu_starts_a_thread_that_links_back(
    browser: Any, live_server: Any, editor: Any
) -> None:
    load_demo()
    source = Thread.objects.get(title__startswith="Weather")
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{source.id}/")
    message = page.locator("article.msg").nth(1)
    position = message.get_attribute("data-id")
    message.locator(".msg-menu summary").click()
    message.get_by_role("button", name="New thread from here").click()
    page.wait_for_url(lambda url: f"/t/{source.id}/" not in url)

    fork = Thread.objects.exclude(pk=source.pk).get(parent_thread=source)
    assert page.url.endswith(f"/t/{fork.id}/")
    assert page.locator("article.msg").count() == len(selectors.active_path(fork)) == 2
    header = page.locator(".fork-source")
    assert header.inner_text().startswith("From: Weather")
    assert header.inner_text().endswith("message 2")
    screenshot(page, "fork-new-thread", full_page=False)
    header.get_by_role("link").click()
    page.wait_for_url(f"**/t/{source.id}/?leaf={position}*")
    forks = page.locator(f"#m-{position} .msg-forks")
    assert forks.inner_text().startswith("1 thread started from here")
    assert forks.get_by_role("link").get_attribute("href") == f"/t/{fork.id}/"


def test_the_keyboard_reaches_the_menu_item(browser: Any, live_server: Any, editor: Any) -> None:
    load_demo()
    source = Thread.objects.get(title__startswith="Weather")
    page = open_page(browser, live_server, editor, viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/t/{source.id}/")
    message = page.locator("article.msg").last
    message.locator(".msg-menu summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # Report message…
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "New thread from here"
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: f"/t/{source.id}/" not in url)

    assert Thread.objects.filter(parent_thread=source).count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
