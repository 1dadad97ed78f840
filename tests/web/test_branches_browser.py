"""Browser tests of branch state: Restore in Compare and the switcher, a steady Prefer, and the
tree map at 50 branches. Playwright driving Debian's Chromium."""

from __future__ import annotations

from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, last_message, make_run, make_thread, say, user_message
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = BROWSER_TESTS

RESTORE = "Make this answer active"


def _regenerated_last_answer() -> tuple[Thread, Run, Message, Message]:
    """A reply run (prompt and answer), its answer regenerated twice; returns thread, reply
    run, prompt and the reply's (old) answer."""
    thread = make_thread("Regenerated in the browser")
    ask(thread, "Hello")
    say(thread, "Hi there, what would you like to know?")
    reply = make_run(
        thread,
        user_message("What is **PostgreSQL**?"),
        ("text-delta", {"delta": "PostgreSQL is a database.\n\n| a | b |\n|---|---|\n| 1 | 2 |"}),
    )
    prompt, old = reply.messages.order_by("position")
    say(thread, "PostgreSQL is an object-relational database system.", fork_from=prompt.id)
    say(thread, "PostgreSQL is a relational database system.", fork_from=prompt.id)
    thread.refresh_from_db()
    return thread, reply, prompt, old


def test_compare_offers_restore_on_every_alternative_and_it_works(
    browser: Any,
    live_server: Any,
    editor: Any,
) -> None:
    thread, reply, prompt, old = _regenerated_last_answer()
    assert reply.status == RunStatus.COMMITTED  # not superseded at the prompt: it forked above
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{thread.id}/fork/{prompt.id}/compare/")
    columns = page.locator(".compare-grid > .col")
    assert columns.count() == 3
    states = [columns.nth(i).locator(".col-title .status").inner_text().lower() for i in range(3)]
    assert states == ["active", "alternative", "alternative"]
    # One Restore per alternative, none on the active branch.
    assert columns.nth(0).get_by_role("button", name=RESTORE).count() == 0
    assert [columns.nth(i).get_by_role("button", name=RESTORE).count() for i in (1, 2)] == [1, 1]
    # The diff reads the rendered table, not its pipes.
    assert "|" not in page.locator(".compare-grid .diff-text").first.inner_text()
    screenshot(page, "80-compare-alternatives")
    column = page.locator(".col", has=page.locator(f"a[href='/runs/{reply.id}/']"))
    column.get_by_role("button", name=RESTORE).click()
    page.wait_for_selector("#compare .flash")
    first = page.locator(".compare-grid > .col").nth(0)
    assert first.locator(f"a[href='/runs/{reply.id}/']").count() == 1
    assert first.locator(".col-title .status").inner_text().lower() == "active"
    thread.refresh_from_db()
    assert thread.head_id == old.id
    assert Message.objects.get(pk=old.pk).active
    screenshot(page, "81-compare-restored")


def test_the_switcher_offers_one_restore_that_makes_the_branch_shown_active(
    browser: Any,
    live_server: Any,
    editor: Any,
) -> None:
    thread, _, _, old = _regenerated_last_answer()
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{thread.id}/?leaf={old.id}")
    card = page.locator(f"#m-{old.id}")
    assert card.locator(".switcher .branch-state").inner_text().lower() == "alternative"
    assert page.get_by_role("button", name=RESTORE).count() == 1
    screenshot(page, "82-switcher-alternative", full_page=False)
    narrow = open_page(browser, live_server, editor, viewport={"width": 390, "height": 844})
    narrow.goto(f"{live_server.url}/t/{thread.id}/?leaf={old.id}")
    assert narrow.get_by_role("button", name=RESTORE).is_visible()
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(narrow, "87-switcher-alternative-narrow", full_page=False)
    card.get_by_role("button", name=RESTORE).click()
    page.wait_for_selector("#conversation .flash")
    assert page.get_by_role("button", name=RESTORE).count() == 0
    assert page.locator(f"#m-{old.id} .switcher .branch-state").inner_text().lower() == "active"
    thread.refresh_from_db()
    assert thread.head_id == old.id


def test_opening_prefer_moves_no_column(
    browser: Any,
    live_server: Any,
    editor: Any,
) -> None:
    thread, _, prompt, _ = _regenerated_last_answer()
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{thread.id}/fork/{prompt.id}/compare/")

    def tops() -> list[float]:
        boxes = [page.locator(f"#col-{n} .col-body").bounding_box() for n in (1, 2, 3)]
        return [box["y"] for box in boxes if box]

    before = tops()
    assert len(before) == 3
    page.locator("#col-2 .prefer > summary").click()
    note = page.locator("#col-2 textarea[name=note]")
    note.wait_for(state="visible")
    assert tops() == before
    screenshot(page, "83-compare-prefer-open", full_page=False)
    note.fill("clearer")
    page.locator("#col-2").get_by_role("button", name="Mark as preferred").click()
    page.wait_for_selector("#col-2 >> text=★ Your preferred")


def test_the_tree_map_reads_at_fifty_branches(
    browser: Any,
    live_server: Any,
    viewer: Any,
) -> None:
    thread = make_thread("Fifty answers")
    prompt = last_message(ask(thread, "Give me a number"))
    answers = [
        last_message(say(thread, f"Number {n} it is", fork_from=prompt.id)) for n in range(50)
    ]
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    assert page.locator(".tree-row.is-active").count() == 2  # the prompt and the last answer
    alternative = page.locator(f".tree-row a[href*='leaf={answers[0].id}']")
    assert not alternative.is_visible()  # folded below its fork point
    screenshot(page, "84-tree-map-50-folded")
    # Keyboard only: the fork point's line (a tree view's item) opens its branches with →.
    assert page.locator(".tree-fork .fork-toggle").inner_text() == "49 other branches here"
    fork_point = page.locator(".tree-row.is-active > a").first
    assert fork_point.get_attribute("aria-expanded") == "false"
    fork_point.focus()
    page.keyboard.press("ArrowRight")
    alternative.wait_for(state="visible")
    assert fork_point.get_attribute("aria-expanded") == "true"
    assert page.locator(".tree-row.is-alternative").count() == 49
    screenshot(page, "85-tree-map-50-open")
    alternative.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#m-{answers[0].id}")
    assert page.locator(".branch-banner").is_visible()
    narrow = open_page(browser, live_server, viewer, viewport={"width": 390, "height": 844})
    narrow.goto(f"{live_server.url}/t/{thread.id}/tree/")
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(narrow, "86-tree-map-50-narrow")
