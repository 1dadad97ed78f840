"""Browser test of an experiment (issue 29): from the thread list's "Run experiment on these
threads", the form, the progress bar (htmx polling) reaching the end as a real worker
generates the candidates, two rows judged with the keyboard in judge mode, and adopting the
one the candidate won."""

from __future__ import annotations

import time
from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_thread, say
from transcripts.ledger.default_project import default_project
from transcripts.models import Experiment, ExperimentItem, ItemStatus, Message, Thread

pytestmark = BROWSER_TESTS

WIDE = {"width": 1360, "height": 900}


def _threads() -> list[Thread]:
    threads = []
    for topic in ("refund for a late parcel", "refund after a move", "refund of a gift"):
        thread = make_thread(f"Support: {topic}", project=default_project())
        ask(thread, f"Can I get a {topic}?")
        say(thread, "Yes: write to support with the order number.")
        threads.append(thread)
    return threads


def _wait_for_text(page: Any, selector: str, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in page.locator(selector).inner_text():
            return
        time.sleep(0.2)
    screenshot(page, "debug-experiment-progress")
    raise AssertionError(f"{selector} never said {text!r}")


def test_an_experiment_from_the_thread_list_runs_and_a_row_is_adopted(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    threads = _threads()
    page = open_page(browser, live_server_asgi, editor, viewport=WIDE)
    page.goto(live_server_asgi.url + "/?q=refund")
    page.get_by_role("link", name="Run experiment on these threads").click()
    page.wait_for_selector("form.exp-form")
    assert page.locator("#exp-filter").input_value() == "q=refund"
    page.locator("#exp-name").fill("Shorter refunds")
    page.select_option("#exp-choice", "demo:demo-brief")
    page.locator("#exp-concurrency").fill("2")
    screenshot(page, "70-experiment-form", full_page=False)
    page.locator("form.exp-form button[type=submit]").click()
    page.wait_for_selector("#exp-progress")
    experiment = Experiment.objects.get(name="Shorter refunds")
    assert experiment.item_count == len(threads)
    assert page.locator("#exp-progress").inner_text().startswith("0 of 3 done")
    # The worker starts now: the bar (polled every second) reaches the end, then the page
    # reloads with the rows.
    start_worker()
    _wait_for_text(page, "#exp-progress", "3 of 3 done, 0 failed")
    page.wait_for_selector("tbody.exp-row details.exp-diff summary")
    assert page.locator("#exp-progress").get_attribute("hx-get") is None
    assert page.locator("#exp-progress progress").get_attribute("value") == "3"
    screenshot(page, "71-experiment-done", full_page=False)

    # Judge mode: b on the first pair (the candidate is better), a on the second.
    page.get_by_role("link", name="Judge mode").click()
    page.wait_for_selector("#judge-progress:has-text('0 of 3 judged')")
    page.keyboard.press("b")
    page.wait_for_selector("#judge-progress:has-text('1 of 3 judged')")
    page.keyboard.press("a")
    page.wait_for_selector("#judge-progress:has-text('2 of 3 judged')")
    verdicts = dict(
        ExperimentItem.objects.filter(experiment=experiment).values_list("position", "outcome")
    )
    assert verdicts == {0: "win", 1: "loss", 2: ""}
    page.goto(f"{live_server_asgi.url}/p/default/experiments/{experiment.id}/")
    page.wait_for_selector("tbody.exp-row details.exp-diff summary")

    first = ExperimentItem.objects.get(experiment=experiment, position=0)
    assert first.status == ItemStatus.DONE
    row = page.locator(f"#item-{first.pk}")
    row.locator("details.exp-diff summary").click()
    assert row.locator("details.exp-diff .diff-text").is_visible()
    row.get_by_role("button", name="Adopt").click()
    page.wait_for_selector(f"#item-{first.pk} >> text=restore the original")
    thread = Thread.objects.get(pk=first.thread_id)
    assert Message.objects.get(pk=thread.head_id).run_id == first.run_id
    screenshot(page, "72-experiment-adopted", full_page=False)
