"""The score panel in the browser (issue 28): by keyboard alone an editor opens an answer's
"Score" panel, picks a label, saves, and the answer's chip shows it, swapped in place and said;
a refused value is shown in the form and nothing is stored; the whole conversation is scored
the same way; on a phone the open panel fits."""

from __future__ import annotations

from typing import Any

from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts.demo import load_demo
from transcripts.ledger import scores
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import Message, Score, Thread

pytestmark = BROWSER_TESTS

LISTEN = """() => {
  window.said = [];
  const region = document.getElementById('announcer');
  new MutationObserver(() => { if (region.textContent) window.said.push(region.textContent); })
    .observe(region, {childList: true, characterData: true, subtree: true});
}"""

SLOW_SETTLE = """() => {
  window.settled = 0;
  htmx.config.defaultSettleDelay = 1500;
  document.addEventListener('htmx:afterSettle', () => { window.settled += 1; });
}"""


def test_an_editor_scores_an_answer_by_keyboard_and_the_chip_shows(
    browser: Any, live_server: Any
) -> None:
    load_demo()
    project = default_project()
    editor = make_user("panel-editor")
    set_member(project=project, user=editor, role="editor")
    owner = Author(user=None)
    labels = ("pass", "fail")
    verdict = scores.create_score_config(
        project=project, author=owner, spec=ConfigSpec("verdict", "categorical", labels=labels)
    )
    helpfulness = scores.create_score_config(
        project=project, author=owner, spec=ConfigSpec("helpfulness", "numeric", 1, 5)
    )
    thread = Thread.objects.get(title__startswith="Weather")
    answer = Message.objects.filter(thread=thread, role="assistant", active=True).earliest("depth")
    page = open_page(browser, live_server, editor)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    page.evaluate(LISTEN)
    url = page.url
    part = f"#sc-{answer.id}"

    page.locator(f"{part} .score-panel > summary").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{part} .score-panel[open]")
    page.locator(f"{part} input[name=value][value=pass]").focus()
    page.keyboard.press("ArrowRight")  # radios move by arrow keys: fail
    assert page.locator(f"{part} input[value=fail]").is_checked()
    page.keyboard.press("Tab")  # the comment
    page.keyboard.type("Misses the forecast")
    page.keyboard.press("Tab")  # Save verdict
    page.keyboard.press("Enter")
    page.wait_for_selector(f"{part} .score-chip:has-text('verdict')")
    assert page.url == url  # swapped in place, no reload
    chip = page.locator(f"{part} .score-chip").inner_text()
    assert "verdict" in chip and "fail" in chip and "person" in chip
    page.wait_for_function("window.said.includes('Saved: verdict fail.')")
    # The focus stays on the button pressed, in the panel kept open.
    assert page.evaluate("document.activeElement.id") == f"sc-save-{answer.id}-{verdict.pk}"
    stored = Score.objects.get(message_id=answer.id, author=editor)
    assert (stored.label, stored.comment) == ("fail", "Misses the forecast")
    assert stored.source == "person"
    screenshot(page, "score-panel-01-saved-by-keyboard", full_page=False)

    # A value out of range (past the browser's own check) is refused in the form.
    number = page.locator(f"{part} input[name=value][type=number]")
    number.evaluate("input => { input.removeAttribute('max'); }")
    number.fill("9")
    # A slow settle (as on a busy machine): the reader moves on before the answer settles.
    page.evaluate(SLOW_SETTLE)
    page.locator(f"#sc-save-{answer.id}-{helpfulness.pk}").click()
    refusal = page.locator(f"{part} .gen-refusal").filter(has_text="value must be from 1 to 5")
    refusal.wait_for()
    assert not Score.objects.filter(name="helpfulness").exists()

    # The whole conversation, from its own panel after the last message. The focus the reader
    # moved there stays there when the refusal settles (it is not pulled back to the form).
    whole = f"#sc-thread-{thread.id}"
    summary = page.locator(f"{whole} .score-panel > summary")
    summary.focus()
    page.wait_for_function("window.settled > 0")
    assert summary.evaluate("element => element === document.activeElement")
    page.evaluate("htmx.config.defaultSettleDelay = 20")
    page.keyboard.press("Enter")
    page.locator(f"{whole} input[name=value][value=pass]").focus()
    page.keyboard.press("Space")
    page.locator(f"#sc-save-thread-{thread.id}-{verdict.pk}").press("Enter")
    page.wait_for_selector(f"{whole} .score-chip:has-text('pass')")
    on_thread = Score.objects.get(thread=thread, message__isnull=True, author=editor)
    assert on_thread.label == "pass"

    page.set_viewport_size({"width": 390, "height": 844})
    page.locator(part).scroll_into_view_if_needed()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    screenshot(page, "score-panel-02-phone", full_page=False)
