"""The tree map from the keyboard (issue 26): one Tab stop, the arrow keys of a tree view, Enter
opens a branch in the conversation, and a fork point's line says whether it is open."""

from __future__ import annotations

from typing import Any

from tests.a11y import SCHEMES, audit
from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts.demo import load_demo
from transcripts.models import Message, Thread

pytestmark = BROWSER_TESTS


def _focused(page: Any) -> dict[str, Any]:
    """What has the focus: its text, link, ARIA state and whether its focus ring shows."""
    return dict(
        page.evaluate(
            """() => {
                const el = document.activeElement;
                const style = getComputedStyle(el);
                return {
                    text: el.textContent.replace(/\\s+/g, ' ').trim(),
                    href: el.getAttribute('href') || '',
                    inTree: !!el.closest('[role="tree"]'),
                    role: el.getAttribute('role') || '',
                    level: el.getAttribute('aria-level') || '',
                    expanded: el.getAttribute('aria-expanded'),
                    selected: el.getAttribute('aria-selected'),
                    ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0,
                    tabStops: document.querySelectorAll('[role="tree"] [tabindex="0"]').length,
                };
            }"""
        )
    )


def _press(page: Any, key: str) -> dict[str, Any]:
    page.keyboard.press(key)
    return _focused(page)


def _visible_items(page: Any) -> int:
    return int(
        page.evaluate(
            """() => [...document.querySelectorAll('[role="treeitem"]')]
                      .filter(el => el.checkVisibility()).length"""
        )
    )


def test_the_tree_map_is_walked_with_the_arrow_keys_and_enter_opens_a_branch(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    page.wait_for_selector('[role="tree"] [tabindex="0"]')
    # One Tab stop: the line the conversation shows (the end of the active path).
    for _ in range(40):
        now = _press(page, "Tab")
        if now["inTree"]:
            break
    assert now["role"] == "treeitem" and now["selected"] == "true" and now["ring"]
    assert "Write a haiku about PostgreSQL's MVCC" in now["text"]
    assert "on the active path" in now["text"]
    assert now["tabStops"] == 1
    assert not _press(page, "Tab")["inTree"]
    assert _press(page, "Shift+Tab")["selected"] == "true"

    start = _press(page, "Home")
    assert start["text"].startswith("Start") and start["expanded"] == "true" and start["ring"]
    assert _press(page, "End")["selected"] == "true"
    assert _press(page, "Home") == start
    everything = _visible_items(page)
    # → on an open fork point moves into its branches, ← goes back up to it.
    compare = _press(page, "ArrowRight")
    assert compare["level"] == "2" and compare["href"].endswith("/fork/root/compare/")
    assert _press(page, "ArrowLeft")["text"] == start["text"]
    # ← closes it (its branches leave the walk), → opens it again.
    closed = _press(page, "ArrowLeft")
    assert closed["expanded"] == "false" and _visible_items(page) == 2
    assert _press(page, "ArrowDown")["selected"] == "true"
    assert _press(page, "ArrowUp")["expanded"] == "false"
    assert _press(page, "ArrowRight")["expanded"] == "true"
    assert _visible_items(page) == everything
    # Down through the first messages' fork to the nested fork point of the edited prompt.
    _press(page, "ArrowRight")
    edited = _press(page, "ArrowDown")
    assert edited["text"].startswith("User Write a haiku about PostgreSQL.")
    assert edited["level"] == "2" and edited["expanded"] == "true"
    assert _press(page, "ArrowLeft")["expanded"] == "false"
    after = _press(page, "ArrowDown")
    assert after["level"] == "2" and "One elephant" in after["text"]
    _press(page, "ArrowUp")
    assert _press(page, "ArrowRight")["expanded"] == "true"
    nested = _press(page, "ArrowRight")
    assert nested["level"] == "3" and "/compare/" in nested["href"]
    answer = _press(page, "ArrowDown")
    assert answer["level"] == "3" and answer["text"].startswith("Assistant")
    assert answer["tabStops"] == 1 and answer["ring"]
    screenshot(page, "tree-keyboard")
    # Enter opens that branch in the conversation.
    leaf = answer["href"].split("leaf=")[1].split("#")[0]
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#m-{leaf}")
    assert Message.objects.filter(id=leaf, thread=thread).exists()


def test_a_fork_point_opened_with_the_mouse_says_so_on_its_line(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    owner = page.locator('[role="treeitem"][aria-owns]').nth(1)
    group = page.locator(f"#{owner.get_attribute('aria-owns')}")
    assert owner.get_attribute("aria-expanded") == "true"
    group.locator(".fork-toggle").click()
    page.wait_for_function(
        "el => el.getAttribute('aria-expanded') === 'false'", arg=owner.element_handle()
    )
    assert not group.locator('[role="treeitem"]').first.is_visible()
    group.locator(".fork-toggle").click()
    page.wait_for_function(
        "el => el.getAttribute('aria-expanded') === 'true'", arg=owner.element_handle()
    )
    assert group.locator('[role="treeitem"]').first.is_visible()
    # The summary gave way to the toggle: nothing in the tree but its lines takes the focus.
    assert page.locator('[role="tree"] summary:visible').count() == 0


def test_without_javascript_every_line_is_a_link_and_a_summary_folds_the_branches(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = open_page(browser, live_server, viewer, java_script_enabled=False)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    assert page.locator('[role="tree"] [tabindex]').count() == 0
    assert page.locator(".fork-toggle").count() == 0
    summary = page.locator('[role="tree"] summary').first
    first_branch = page.locator(".tree-branch .tree-row a").first
    assert first_branch.is_visible()
    summary.click()
    assert not first_branch.is_visible()


def test_hovered_and_focused_lines_stay_readable_in_light_and_dark(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    for scheme in SCHEMES:
        page = open_page(browser, live_server, viewer, color_scheme=scheme)
        page.goto(f"{live_server.url}/t/{thread.id}/tree/")
        for selector in (
            ".tree-row.is-alternative > a",
            ".tree-row.is-active > a",
            ".fork-actions > a",
            ".fork-toggle",
        ):
            target = page.locator(selector).first
            target.hover()
            assert audit(page, include=selector) == [], f"{selector} hovered, {scheme}"
            if selector != ".fork-toggle":  # the toggle is the mouse's; keys use the line
                target.focus()
                assert audit(page, include=selector) == [], f"{selector} focused, {scheme}"
        page.context.close()
