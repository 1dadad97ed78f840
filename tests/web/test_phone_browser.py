"""Phones and keyboards (issue 26): the header's Menu, the skip link, touch targets, code blocks.

At 390 px the header's links sit in a "Menu" (a `<details>`) that opens without JavaScript
and holds every link; at 1366 px the same links show inline without opening anything. "Skip
to content" is the first Tab stop and Enter moves focus into `<main>`. Each message action is
at least 24 x 24 px (WCAG 2.5.8) at phone and desk widths, the footer's run link too, and a
long code line scrolls inside its own box, not the page, and takes the focus so a keyboard
can scroll it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.a11y import overflow
from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_run, make_thread
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import Message, RunOrigin, Thread

pytestmark = BROWSER_TESTS

PHONE = {"width": 390, "height": 844}
DESK = {"width": 1366, "height": 900}
LINKS = ("Threads", "Import", "Datasets", "Moderation", "Admin", "API docs")
LONG_LINE = "value = '" + "abcdefghij" * 30 + "'"
# Where each visible element of a selector sits: its label and its box.
BOXES = """(selector) => Array.from(document.querySelectorAll(selector))
  .filter((el) => el.offsetParent !== null)
  .map((el) => {
    const r = el.getBoundingClientRect();
    return {label: el.getAttribute("aria-label") || el.innerText.trim(),
            left: r.left, right: r.right, width: r.width, height: r.height};
  })"""


@pytest.fixture
def admin(db: Any) -> Any:
    """A staff member who administers the default project (every header link shows)."""
    user = make_user("phone-admin", is_staff=True)
    set_member(project=default_project(), user=user, role="admin")
    return user


def _stopped_haiku() -> tuple[Thread, Message]:
    """The demo's haiku thread with a stopped answer at its first fork (five alternatives)."""
    load_demo()
    haiku = Thread.objects.get(title__icontains="Haiku")
    prompt = Message.objects.get(thread=haiku, depth=0, active=False)
    typing = ("text-delta", {"delta": "Rows settle"})
    run = make_run(haiku, typing, fork_from=prompt.id, commit=False, origin=RunOrigin.WEB)
    ledger.stop_run(run=run)
    return haiku, Message.objects.get(run=run)


def _menu_links(page: Any) -> dict[str, Any]:
    """The header's links and controls by name, found inside the Menu."""
    menu = page.locator("header .site-menu")
    found = {name: menu.get_by_role("link", name=name, exact=True) for name in LINKS}
    found["project switcher"] = menu.locator(".project-menu > summary")
    found["Log out"] = menu.get_by_role("button", name="Log out")
    return found


@pytest.mark.parametrize("width", [360, 390])
def test_the_phone_menu_opens_without_javascript_and_holds_every_link(
    browser: Any, live_server: Any, admin: Any, width: int
) -> None:
    viewport = {"width": width, "height": 844}
    page = open_page(browser, live_server, admin, viewport=viewport, java_script_enabled=False)
    page.goto(live_server.url + "/")
    links = _menu_links(page)
    assert not links["Threads"].is_visible()  # folded away until the Menu opens
    assert page.locator(".topbar a.new-thread-link").is_visible()  # New thread stays in sight

    page.locator(".site-menu > summary", has_text="Menu").click()

    for name, control in links.items():
        assert control.is_visible(), f"{name} is not in the open Menu"
        box = control.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{name} is off-screen"
    assert links["Datasets"].get_attribute("href") == "/p/default/datasets/"
    assert overflow(page) == 0
    screenshot(page, f"phone-menu-open-{width}", full_page=False)
    links["project switcher"].click()
    choice = page.locator(".site-menu .menu-choice", has_text="Default")
    assert choice.is_visible() and choice.bounding_box()["width"] <= width
    links["Datasets"].click()
    page.wait_for_url("**/p/default/datasets/")


def test_wide_screens_show_the_links_without_opening_anything(
    browser: Any, live_server: Any, admin: Any
) -> None:
    page = open_page(browser, live_server, admin, viewport=DESK)
    page.goto(live_server.url + "/")
    assert not page.locator(".site-menu > summary").is_visible()
    for name, control in _menu_links(page).items():
        assert control.is_visible(), f"{name} is hidden at 1366 px"
    assert page.locator(".topbar a.new-thread-link").is_visible()
    assert page.locator(".topnav a[aria-current=page]").inner_text() == "Threads"
    page.get_by_role("link", name="Import", exact=True).click()
    page.wait_for_url("**/import/")
    assert page.locator(".topnav a[aria-current=page]").inner_text() == "Import"


@pytest.mark.parametrize("viewport", [PHONE, DESK], ids=["390", "1366"])
def test_the_skip_link_is_the_first_tab_stop_and_moves_focus_into_main(
    browser: Any, live_server: Any, admin: Any, viewport: dict[str, int]
) -> None:
    haiku, _ = _stopped_haiku()
    page = open_page(browser, live_server, admin, viewport=viewport)
    page.goto(f"{live_server.url}/t/{haiku.id}/")
    page.wait_for_selector("article.msg")
    skip = page.locator("a.skip-link")
    hidden = skip.bounding_box()
    assert hidden["y"] + hidden["height"] <= 0, hidden  # above the page until it has focus

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    box = skip.bounding_box()
    assert box["y"] >= 0 and box["width"] > 40 and box["height"] > 20, box  # shown when focused
    screenshot(page, f"phone-skip-link-{viewport['width']}", full_page=False)
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.querySelector('main').contains(document.activeElement)")


@pytest.mark.parametrize("viewport", [PHONE, DESK], ids=["390", "1366"])
def test_every_message_action_is_at_least_24_px_square(
    browser: Any, live_server: Any, admin: Any, viewport: dict[str, int]
) -> None:
    haiku, stopped = _stopped_haiku()
    page = open_page(browser, live_server, admin, viewport=viewport)
    page.goto(f"{live_server.url}/t/{haiku.id}/?leaf={stopped.id}")
    page.wait_for_selector("article.msg")
    boxes = page.evaluate(
        BOXES, ".msg-tools .icon-btn, .switcher a.sib, .sib-compare, .msg-meta > a"
    )
    labels = {box["label"] for box in boxes}
    # The footer's link to the run's trace ("run · stopped") is a target of its own too.
    assert any(label.startswith("run") for label in labels), sorted(labels)
    for expected in ("Copy text", "Edit", "Regenerate", "Regenerate with another model",
                     "Continue", "Permalink", "More actions", "Previous alternative",
                     "Next alternative", "Compare"):  # fmt: skip
        assert expected in labels, f"{expected} missing from {sorted(labels)}"
    small = [box for box in boxes if box["width"] < 24 or box["height"] < 24]
    assert not small, small
    assert all(box["right"] <= viewport["width"] for box in boxes), boxes


@pytest.mark.parametrize("width", [360, 390])
def test_a_long_code_line_scrolls_inside_its_box_not_the_page(
    browser: Any, live_server: Any, admin: Any, width: int
) -> None:
    thread = make_thread("Long code")
    ask(thread, "Show me the line")
    answer = f"Here:\n\n```python\n{LONG_LINE}\n```\n\nand short:\n\n```python\nx = 1\n```\n"
    make_run(thread, ("text-delta", {"delta": answer}))
    page = open_page(browser, live_server, admin, viewport={"width": width, "height": 844})
    page.goto(f"{live_server.url}/t/{thread.id}/")
    code = page.locator(".msg-body pre", has_text="abcdefghij")
    scrolls = code.evaluate("(pre) => pre.scrollWidth > pre.clientWidth")
    assert scrolls, "the long line should scroll inside its <pre>"
    # A keyboard reaches the block that scrolls (WCAG 2.1.1), and scrolls it with the arrows;
    # a block that fits is no Tab stop.
    assert code.get_attribute("tabindex") == "0"
    assert page.locator(".msg-body pre", has_text="x = 1").get_attribute("tabindex") is None
    code.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "() => document.querySelector('pre[tabindex=\"0\"]').scrollLeft > 0", timeout=5_000
    )
    assert code.bounding_box()["x"] + code.bounding_box()["width"] <= width
    assert overflow(page) == 0


def test_escape_or_a_click_outside_closes_the_phone_menu(
    browser: Any, live_server: Any, admin: Any
) -> None:
    page = open_page(browser, live_server, admin, viewport={"width": 390, "height": 844})
    page.goto(live_server.url + "/")
    menu = page.locator("details.site-menu")
    summary = page.locator(".site-menu > summary")
    summary.focus()
    page.keyboard.press("Enter")
    assert menu.get_attribute("open") is not None
    page.keyboard.press("Escape")
    assert menu.get_attribute("open") is None
    assert page.evaluate("() => document.activeElement.matches('.site-menu > summary')")
    summary.click()
    assert menu.get_attribute("open") is not None
    page.mouse.click(200, 830)  # below the open panel
    assert menu.get_attribute("open") is None
