"""Feedback in the browser (issue 28): a click on Helpful swaps the answer's feedback part in
place (pressed, counted, said), and `-` on the focused answer gives Not helpful, pressed again
takes it back."""

from __future__ import annotations

from typing import Any

from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts.demo import load_demo
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import Feedback, Message, Thread

pytestmark = BROWSER_TESTS

LISTEN = """() => {
  window.said = [];
  const region = document.getElementById('announcer');
  new MutationObserver(() => { if (region.textContent) window.said.push(region.textContent); })
    .observe(region, {childList: true, characterData: true, subtree: true});
}"""


def _pressed(page: Any, answer_id: str) -> dict[str, str | None]:
    part = page.locator(f"#fb-{answer_id}")
    return {
        "up": part.locator("button.fb-up").get_attribute("aria-pressed"),
        "down": part.locator("button.fb-down").get_attribute("aria-pressed"),
    }


def test_a_viewer_clicks_helpful_then_presses_minus_and_minus_again(
    browser: Any, live_server: Any
) -> None:
    load_demo()
    viewer = make_user("fb-viewer")
    set_member(project=default_project(), user=viewer, role="viewer")
    thread = Thread.objects.get(title__startswith="Weather")
    answer = Message.objects.filter(thread=thread, role="assistant", active=True).earliest("depth")
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    page.evaluate(LISTEN)
    url = page.url

    page.locator(f"#fb-{answer.id} button.fb-up").click()
    page.wait_for_selector(f"#fb-{answer.id} button.fb-up[aria-pressed=true]")
    assert page.url == url  # swapped in place, no reload
    assert page.locator(f"#fb-{answer.id} button.fb-up .fb-count").inner_text() == "1"
    page.wait_for_function("window.said.includes('Saved: helpful.')")
    assert Feedback.objects.get(message_id=answer.id, user=viewer).up is True
    screenshot(page, "scores-01-helpful-clicked", full_page=False)

    page.locator(f"#m-{answer.id}").focus()
    page.keyboard.press("-")
    page.wait_for_selector(f"#fb-{answer.id} button.fb-down[aria-pressed=true]")
    assert _pressed(page, answer.id) == {"up": "false", "down": "true"}
    assert Feedback.objects.get(message_id=answer.id, user=viewer).up is False
    screenshot(page, "scores-02-not-helpful-by-keyboard", full_page=False)

    page.locator(f"#m-{answer.id}").focus()
    page.keyboard.press("-")
    page.wait_for_selector(f"#fb-{answer.id} button.fb-down[aria-pressed=false]")
    page.wait_for_function("window.said.includes('Your feedback is removed.')")
    assert not Feedback.objects.filter(message_id=answer.id).exists()
