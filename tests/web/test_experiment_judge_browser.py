"""Judge mode by keyboard (issue 29): an editor presses b on the first pair and a on the
second; each verdict is stored as Compare's preference rating and the page moves on to the
next pair (htmx swaps it in; the address follows); at 390 px the answers stack."""

from __future__ import annotations

from typing import Any

from tests.base import Team
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.web.test_experiment_judge import _thread, run_experiment
from transcripts.models import RunRating

pytestmark = BROWSER_TESTS


def test_an_editor_judges_two_pairs_with_the_keyboard(
    browser: Any, live_server: Any, team: Team
) -> None:
    threads = [_thread(team.alpha, name) for name in ("first", "second", "third")]
    experiment = run_experiment(
        team.alpha, team.editor, threads, "keys", evaluators=[{"type": "exact-match"}]
    )
    items = list(experiment.items.order_by("position"))
    assert [i.status for i in items] == ["done"] * 3
    page = open_page(browser, live_server, team.editor)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/p/alpha/experiments/{experiment.id}/judge/")

    def shown() -> str:
        return str(page.locator("#judge-thread").inner_text())

    assert "0 of 3 judged" in page.inner_text("#judge-progress")
    assert shown().startswith("first")
    screenshot(page, "29-judge-first")
    page.keyboard.press("b")
    page.wait_for_selector("#judge-progress:has-text('1 of 3 judged')")
    assert shown().startswith("second")
    assert f"item={items[1].pk}" in page.url
    page.keyboard.press("a")
    page.wait_for_selector("#judge-progress:has-text('2 of 3 judged')")
    assert shown().startswith("third")
    screenshot(page, "29-judge-third")

    assert RunRating.objects.get(user=team.editor, run_id=items[0].run_id).preferred
    assert RunRating.objects.get(user=team.editor, run_id=items[1].baseline_run_id).preferred
    assert RunRating.objects.filter(user=team.editor).count() == 2
    outcomes = [i.person_outcome for i in experiment.items.order_by("position")]
    assert outcomes == ["win", "loss", ""]

    # n skips the third pair: the only one left, so it comes round to it again; t ends it.
    with page.expect_response(lambda r: "after=" in r.url):
        page.keyboard.press("n")
    page.wait_for_selector("#judge-pair form[data-judge-key=t]:not([data-judge-sent])")
    assert shown().startswith("third")
    page.keyboard.press("t")
    page.wait_for_selector("text=Every pair is judged.")
    assert not errors, errors

    phone = open_page(browser, live_server, team.editor, viewport={"width": 390, "height": 844})
    phone.goto(f"{live_server.url}/p/alpha/experiments/{experiment.id}/judge/?item={items[0].pk}")
    sides = phone.locator(".judge-side")
    first_box, second_box = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert second_box["y"] >= first_box["y"] + first_box["height"]  # stacked
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(phone, "29-judge-phone")
