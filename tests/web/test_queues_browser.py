"""The review page by keyboard only (issue 28): Enter starts, a digit answers the first score,
y/n the yes-or-no one, Enter submits and opens the next item, s skips it; then the queue has
nothing left for the reviewer."""

from __future__ import annotations

from typing import Any

from tests.base import Team
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_thread, say
from transcripts.ledger import queues, scores
from transcripts.ledger.queues import ItemSource, QueueSpec
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import QueueItem, QueueReview, Score, Thread

pytestmark = BROWSER_TESTS


def _answered(team: Team, title: str) -> Thread:
    thread = make_thread(title, project=team.alpha)
    ask(thread, f"Question {title}?")
    say(thread, f"Answer {title}.")
    return thread


def test_a_reviewer_scores_and_skips_by_keyboard_only(
    browser: Any, live_server: Any, team: Team
) -> None:
    owner = Author(user=team.owner)
    for spec in (
        ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
        ConfigSpec(name="policy", data_type="boolean"),
    ):
        scores.create_score_config(project=team.alpha, author=owner, spec=spec)
    threads = [_answered(team, name) for name in ("first", "second", "third")]
    queue, _ = queues.create_queue(
        project=team.alpha,
        author=owner,
        spec=QueueSpec(name="Keys", config_names=("helpfulness", "policy")),
        source=ItemSource(thread_ids=tuple(t.id for t in threads)),
    )
    page = open_page(browser, live_server, team.editor)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/p/alpha/queues/{queue.pk}/review/")
    assert "3 items to review" in page.inner_text("#content")

    def shown() -> str:
        return str(page.locator(".queue-branch h2").inner_text())

    page.keyboard.press("Enter")  # start
    page.wait_for_selector(".queue-branch")
    first = shown()
    page.keyboard.press("4")
    page.keyboard.press("y")
    assert page.locator("input[type=number]").input_value() == "4"
    assert page.locator("input[type=radio][value=yes]").is_checked()
    screenshot(page, "28-queue-review-keys")
    page.keyboard.press("Enter")  # submit, and the next item
    page.wait_for_selector(f".queue-branch h2:not(:has-text('{first}'))")
    assert "1 of 3 done" in page.inner_text("#content")
    second = shown()
    page.keyboard.press("s")  # skip it
    page.wait_for_selector(f".queue-branch h2:not(:has-text('{second}'))")
    third = shown()
    page.keyboard.press("2")
    page.keyboard.press("n")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Nothing left for you now.")
    screenshot(page, "28-queue-review-done")

    assert len({first, second, third}) == 3
    rows = Score.objects.filter(author=team.editor).order_by("thread__title", "name")
    assert [(s.thread.title, s.name, s.value, s.source) for s in rows] == sorted(
        [
            (first.split(" open")[0], "helpfulness", 4.0, "person"),
            (first.split(" open")[0], "policy", 1.0, "person"),
            (third.split(" open")[0], "helpfulness", 2.0, "person"),
            (third.split(" open")[0], "policy", 0.0, "person"),
        ]
    )
    assert QueueReview.objects.filter(reviewer=team.editor, skipped=True).count() == 1
    assert QueueItem.objects.filter(state="done").count() == 2
    assert not errors
    phone = open_page(browser, live_server, team.owner, viewport={"width": 390, "height": 844})
    phone.goto(f"{live_server.url}/p/alpha/queues/{queue.pk}/")
    assert "2 of 3 done" in phone.inner_text("#content")
    screenshot(phone, "28-queue-390")
    phone.goto(f"{live_server.url}/p/alpha/queues/")
    screenshot(phone, "28-queues-390")
