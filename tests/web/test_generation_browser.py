"""Browser tests of generation: Chromium against uvicorn (SSE needs ASGI) and a real worker."""

from __future__ import annotations

import time
from typing import Any

from tests.browser import ARTIFACTS, BROWSER_TESTS, open_page, screenshot
from tests.generation.support import run_status, wait_for
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.generation.generators.demo import demo_answer
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = BROWSER_TESTS

# How much of the new branch's content the page shows.
LIVE_TEXT = (
    "Array.from(document.querySelectorAll('.run-live .msg-body'))"
    ".reduce((n, body) => n + body.innerText.length, 0)"
)


def _weather() -> tuple[Thread, Message]:
    """The demo's tool-using thread and its first answer."""
    load_demo()
    thread = Thread.objects.get(title__startswith="Weather")
    return thread, Message.objects.get(thread=thread, depth=1, active=True)


def _open_options(form: Any, delay_ms: int) -> None:
    """Unfold a form's options and slow the demo generator down so streaming is visible."""
    form.locator("details.gen-options summary").click()
    form.locator("input[name=delayMs]").fill(str(delay_ms))


def _watch_stream(page: Any, timeout: float = 30.0) -> list[int]:
    """The lengths of the live text seen until the live block goes away (the run committed)."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.locator(".run-live").count() == 0 and seen:
            return seen
        length = page.evaluate(LIVE_TEXT)
        if length and (not seen or length != seen[-1]):
            seen.append(length)
        time.sleep(0.05)
    screenshot(page, "debug-stream")
    (ARTIFACTS / "debug.html").write_text(page.content())
    raise AssertionError(f"the run did not commit in {timeout}s (saw {seen})")


def _until_shown(page: Any, run_id: str, timeout: float = 60.0) -> Message:
    """A quick run's last answer, once the live block has gone and the page shows it. (A run
    of a few milliseconds per word may end before any of its text is seen streaming.)"""
    page.wait_for_selector(".run-live", state="detached", timeout=timeout * 1000)
    assert run_status(run_id) == RunStatus.COMMITTED
    last = Message.objects.filter(run_id=run_id, role="assistant").order_by("-position")[0]
    page.locator(f"#m-{last.id}").wait_for()
    return last


def test_a_reader_regenerates_an_answer_watches_it_stream_and_restores_the_first(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    thread, first_answer = _weather()
    original = first_answer.run
    start_worker()
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    card = page.locator(f"#m-{first_answer.id}")
    card.locator("details.gen-more > summary").click()
    form = card.locator("form.gen-form")
    _open_options(form, 40)
    screenshot(page, "20-regenerate-form", full_page=False)
    form.locator("button[type=submit]").click()

    page.wait_for_selector(".run-live.is-open")
    page.wait_for_function(f"({LIVE_TEXT}) > 0", timeout=20_000)
    screenshot(page, "21-regenerate-streaming", full_page=False)
    # The old answer is out of view while the new one streams in its place.
    assert not card.is_visible()
    lengths = _watch_stream(page)
    assert len(lengths) >= 3, f"tokens should arrive in several steps, saw {lengths}"
    assert lengths[-1] > lengths[0]

    # Committed: the new answer is the active branch, with the switcher at the fork point.
    new_run = Run.objects.exclude(pk=original.pk).get(
        thread=thread, fork_from_id=first_answer.parent_id, status=RunStatus.COMMITTED
    )
    new_answer = new_run.messages.get(position=0)
    fresh = page.locator(f"#m-{new_answer.id}")
    assert fresh.locator(".sib-count").inner_text() == "2/2"
    assert fresh.locator(".tag-active").is_visible()
    assert page.locator(".branch-banner").count() == 0
    assert run_status(original.id) == RunStatus.SUPERSEDED
    screenshot(page, "22-regenerated-2-of-2", full_page=False)

    # Switch back to the first answer: a superseded branch, which can be restored.
    fresh.locator("a.sib-prev").click()
    page.wait_for_selector(".branch-banner")
    card = page.locator(f"#m-{first_answer.id}")
    assert card.locator(".sib-count").inner_text() == "1/2"
    assert "Let me check the forecast" in card.inner_text()
    screenshot(page, "23-switched-back", full_page=False)
    card.locator("button.btn-restore").click()
    page.wait_for_function("!document.querySelector('.branch-banner')")
    card = page.locator(f"#m-{first_answer.id}")
    card.wait_for()
    assert card.locator(".tag-active").is_visible()
    assert card.locator(".sib-count").inner_text() == "1/2"
    assert run_status(original.id) == RunStatus.COMMITTED
    assert run_status(new_run.id) == RunStatus.SUPERSEDED
    screenshot(page, "24-restored", full_page=False)


def test_a_reader_stops_a_run_keeps_its_output_as_a_branch_and_continues_it(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    thread, first_answer = _weather()
    start_worker()
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    card = page.locator(f"#m-{first_answer.id}")
    card.locator("details.gen-more > summary").click()
    form = card.locator("form.gen-form")
    _open_options(form, 150)
    form.locator("button[type=submit]").click()
    page.wait_for_function(f"({LIVE_TEXT}) > 0", timeout=20_000)
    page.locator(".run-live button.btn-stop").click()

    # The partial answer is committed as the active branch, marked stopped, and focused.
    page.wait_for_selector("#conversation article.msg.is-stopped")
    page.wait_for_function("document.activeElement.matches('article.msg.is-stopped')")
    stopped = Run.objects.get(thread=thread, metadata__stopped=True)
    assert stopped.status == RunStatus.COMMITTED
    kept = list(stopped.messages.order_by("position"))
    # Its last assistant message carries the mark (a tool result may follow it).
    marked = [m for m in kept if m.role == "assistant"][-1]
    assert marked.metadata["finishReason"] == "stopped" and all(m.active for m in kept)
    assert run_status(first_answer.run_id) == RunStatus.SUPERSEDED
    focused = page.evaluate("document.activeElement.id")
    assert focused == f"m-{marked.id}"
    assert page.locator(f"#m-{marked.id} .tag-stopped").is_visible()
    screenshot(page, "25-stopped-kept-focused", full_page=False)

    # After a reload it is still there, as the second of two alternatives.
    page.reload()
    stopped_card = page.locator(f"#m-{marked.id}")
    assert stopped_card.locator(".tag-stopped").is_visible()
    assert page.locator(f"#m-{kept[0].id} .sib-count").inner_text() == "2/2"
    assert stopped_card.locator("button.btn-continue").is_visible()
    assert stopped_card.locator("button.btn-regenerate").is_visible()
    screenshot(page, "25b-stopped-after-reload", full_page=False)

    # Continue: a new branch that carries the same answer on to its end.
    stopped_card.locator("button.btn-continue").click()
    page.wait_for_selector(".run-live.is-open")
    _watch_stream(page, timeout=60)
    continued = Run.objects.get(thread=thread, metadata__continues=marked.id)
    assert run_status(continued.id) == RunStatus.COMMITTED
    answer = continued.messages.get()
    prompt = Message.objects.get(pk=first_answer.parent_id).parts[0]["text"]
    expected = demo_answer(prompt, model=stopped.model, seed=stopped.id)
    assert "".join(p["text"] for p in answer.parts if p["type"] == "text").strip() == expected
    page.locator(f"#m-{answer.id}").wait_for()
    assert page.locator(f"#m-{answer.id} .sib-count").inner_text() == "3/3"
    screenshot(page, "25c-continued", full_page=False)


def test_a_stopped_reply_offers_generate_answer_and_regenerate_takes_one_click(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    thread, _ = _weather()
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    # No worker yet: the reply's run waits, and Stop finds nothing to keep.
    reply = page.locator("form#reply")
    reply.locator("textarea[name=text]").fill("Will it rain in Paris?")
    _open_options(reply, 5)
    reply.locator("button[type=submit]").click()
    page.wait_for_selector(".run-live.is-open")
    page.locator(".run-live button.btn-stop").click()
    page.wait_for_selector(".run-live-body[data-status=cancelled]")
    page.wait_for_function("document.activeElement.matches('.run-live-note')")
    assert "Nothing was generated yet" in page.locator(".run-live-note").inner_text()
    asked = Message.objects.get(thread=thread, role="user", parts__0__text="Will it rain in Paris?")
    page.reload()
    question = page.locator(f"#m-{asked.id}")
    assert question.locator("button.btn-answer").is_visible()
    screenshot(page, "25d-generate-answer-offered", full_page=False)

    start_worker()
    question.locator("button.btn-answer").click()
    page.wait_for_selector(".run-live.is-open")
    answered = Run.objects.filter(thread=thread, fork_from_id=asked.id).latest("created_at")
    # The demo may call a tool first: its last assistant message holds the answer.
    last = _until_shown(page, answered.id)
    answered.refresh_from_db()
    assert answered.parameters["delayMs"] == 5  # the last choice, repeated
    text = last.parts[-1]["text"]
    assert "Paris" in text and "rain" in text  # the demo answers the prompt

    # One click on Regenerate starts a run at once, with the same choice.
    page.reload()
    # The menu for another model opens and closes from the keyboard.
    menu = page.locator(f"#m-{last.id} details.gen-more")
    menu.locator("> summary").focus()
    page.keyboard.press("Enter")
    assert menu.locator("select[name=choice]").is_visible()
    assert menu.locator("select[name=choice] option:checked").inner_text() == answered.model
    page.keyboard.press("Escape")
    assert not menu.locator("select[name=choice]").is_visible()
    page.locator(f"#m-{last.id} button.btn-regenerate").click()
    page.wait_for_selector(".run-live.is-open")
    # Forked from the answer's parent: the question, or the demo's tool result before it.
    again = Run.objects.filter(thread=thread).order_by("-created_at")[0]
    assert again.pk != answered.pk and again.fork_from_id == last.parent_id
    assert (again.generator, again.model, again.parameters) == (
        "demo",
        answered.model,
        {"delayMs": 5.0},
    )
    screenshot(page, "25e-one-click-regenerate", full_page=False)
    _until_shown(page, again.id)


def test_a_reader_replies_and_sees_a_failure_with_its_partial_output(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    thread, _ = _weather()
    start_worker()
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    reply = page.locator("form#reply")
    reply.locator("textarea[name=text]").fill("And on Friday?")
    _open_options(reply, 120)
    reply.locator("button[type=submit]").click()
    page.wait_for_function(f"({LIVE_TEXT}) > 0", timeout=20_000)
    asked = Message.objects.get(thread=thread, role="user", parts__0__text="And on Friday?")
    assert page.locator(f"#m-{asked.id}").is_visible()  # committed before the answer starts
    run = Run.objects.get(thread=thread, fork_from_id=asked.id)
    # The model breaks down mid-answer.
    ledger.fail_run(run=run, error={"message": "the model went away", "code": "upstream"})
    page.wait_for_selector(".run-live-body[data-status=failed]")
    live = page.locator(".run-live")
    assert "the model went away" in live.inner_text()
    assert page.evaluate(LIVE_TEXT) > 0
    assert live.locator("button", has_text="Retry").is_visible()
    live.locator(".msg-error").last.scroll_into_view_if_needed()
    screenshot(page, "26-failed-with-partial-output", full_page=False)
    wait_for(lambda: run_status(run.id) == RunStatus.FAILED)


def test_a_locked_thread_offers_no_generation(
    browser: Any, live_server_asgi: Any, editor: Any
) -> None:
    thread, _ = _weather()
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    page = open_page(browser, live_server_asgi, editor, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    note = page.get_by_text("This thread is locked")
    assert note.is_visible()
    note.scroll_into_view_if_needed()
    assert page.locator("form#reply").count() == 0
    assert page.locator("details.gen-more, button.btn-regenerate").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "27-locked-mobile", full_page=False)


def test_the_forms_fit_a_360_pixel_screen_in_dark_mode(
    browser: Any, live_server_asgi: Any, editor: Any
) -> None:
    thread, answer = _weather()
    page = open_page(
        browser,
        live_server_asgi,
        editor,
        viewport={"width": 360, "height": 780},
        color_scheme="dark",
    )
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    card = page.locator(f"#m-{answer.id}")
    card.locator("details.gen-more > summary").click()
    card.locator("details.gen-options summary").click()
    form = card.locator("form.gen-form")
    assert form.is_visible()
    box = form.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "28-mobile-dark-regenerate", full_page=False)
    # Escape closes it; the reply box at the bottom fits too.
    page.keyboard.press("Escape")
    assert not form.is_visible()
    page.locator("form#reply").scroll_into_view_if_needed()
    page.locator("form#reply details.gen-options summary").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "29-mobile-dark-reply", full_page=False)


def test_a_failed_run_with_no_output_stays_after_a_reload_and_retries_by_keyboard(
    browser: Any, live_server_asgi: Any, editor: Any
) -> None:
    thread, answer = _weather()
    run, _ = ledger.begin_run(
        thread=thread, fork_from=answer.parent_id, generator="demo", origin="web"
    )
    ledger.fail_run(run=run, error={"message": "the model went away", "code": "upstream"})
    page = open_page(browser, live_server_asgi, editor, viewport={"width": 390, "height": 780})
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    page.reload()
    failed = page.locator(f"#run-{run.id}")
    assert "Failed branch" in failed.inner_text()
    assert "the model went away" in failed.inner_text()
    assert "Nothing was generated" in failed.inner_text()
    assert "partial output" not in failed.inner_text()
    assert page.locator(f"#m-{answer.id}").is_visible()  # the branch read stays in view
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    failed.scroll_into_view_if_needed()
    screenshot(page, "28-failed-no-output-after-reload", full_page=False)
    retry = failed.locator("button", has_text="Retry")
    retry.focus()
    page.keyboard.press("Enter")
    wait_for(lambda: Run.objects.filter(metadata__retryOf=run.id).exists())
    page.wait_for_selector(f"#run-{run.id}", state="detached")
