"""Browser tests of the run trace: Playwright driving Debian's Chromium."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_thread
from tests.web.test_trace import timed
from transcripts import ledger
from transcripts.models import Run

pytestmark = BROWSER_TESTS


def _tool_run() -> Run:
    thread = make_thread("Should I bike to work?")
    ask(thread, "Should I bike to work in Amsterdam tomorrow morning?")
    answer = "Yes, but leave after 08:00: the rain clears by then. Take a light jacket. " * 3
    words = [
        (2.0 + i * 0.02, "text-delta", {"delta": w + " "}) for i, w in enumerate(answer.split())
    ]
    run, _ = ledger.begin_run(thread=thread, model="gpt-4o-mini", generator="external")
    forecast = {f"{h:02d}:00": "light rain, 9°C" if h < 8 else "dry, 11°C" for h in range(6, 12)}
    ledger.append_events(
        run=run,
        events=timed(
            (0.0, "step-started", {}),
            (0.1, "reasoning", {"text": "I need the forecast "}),
            (0.3, "reasoning", {"text": "for the commute."}),
            (
                0.6,
                "tool-call",
                {
                    "toolCallId": "call_1",
                    "toolName": "get_forecast",
                    "input": {"city": "Amsterdam", "hours": [7, 8, 9]},
                },
            ),
            (
                0.7,
                "step-finished",
                {"finishReason": "tool-calls", "usage": {"inputTokens": 412, "outputTokens": 58}},
            ),
            (
                1.9,
                "tool-result",
                {
                    "toolCallId": "call_1",
                    "toolName": "get_forecast",
                    "output": forecast,
                    "isError": False,
                },
            ),
            (1.95, "step-started", {}),
            *words,
            (
                3.2,
                "step-finished",
                {"finishReason": "stop", "usage": {"inputTokens": 530, "outputTokens": 96}},
            ),
        ),
    )
    return ledger.commit_run(run=run)


def test_the_trace_of_a_tool_using_run_shows_the_tool_span_and_hides_the_raw_log(
    browser: Any,
    live_server: Any,
    viewer: Any,
) -> None:
    run = _tool_run()
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    tool = page.locator(".waterfall tr.kind-tool")
    assert tool.count() == 1
    assert "get_forecast" in tool.locator(".wf-name").inner_text()
    assert tool.locator(".wf-duration").inner_text() == "1.30 s"
    # Its bar sits on the shared axis: after the first LLM call's start, before the run's end.
    bars = {
        kind: page.locator(f".waterfall tr.kind-{kind} .trace-bar rect").first.bounding_box()
        for kind in ("run", "llm", "tool")
    }
    assert bars["run"]["x"] <= bars["llm"]["x"] < bars["tool"]["x"]
    assert bars["tool"]["x"] + bars["tool"]["width"] < bars["run"]["x"] + bars["run"]["width"]
    assert page.locator(".waterfall tr.kind-llm").count() == 2
    assert "$" in page.locator(".total-cost").inner_text()
    # One text segment for the whole answer, not a row per token.
    assert page.locator(".tseg-of-text").count() == 1
    # The raw log is behind its toggle.
    assert not page.locator("details.event").first.is_visible()
    screenshot(page, "14-run-trace")
    page.locator(".raw-log > summary").click()
    assert page.locator("details.event").first.is_visible()
    screenshot(page, "15-run-trace-raw-log", full_page=False)
    page.context.close()


def test_the_trace_at_360_pixels_in_dark_mode_fits_the_screen(
    browser: Any,
    live_server: Any,
    viewer: Any,
) -> None:
    run = _tool_run()
    page = open_page(
        browser, live_server, viewer, viewport={"width": 360, "height": 780}, color_scheme="dark"
    )
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.locator(".waterfall tr.kind-tool").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "16-run-trace-mobile-dark")
    page.context.close()


def test_a_live_update_landing_after_the_final_status_cannot_keep_the_page_streaming(
    browser: Any,
    live_server_asgi: Any,
    viewer: Any,
) -> None:
    """The issue's "STREAMING · updating live" 40 s after commit: a live update that was in
    flight when the run ended lands after the final status was asked for. Both responses are
    held here and released in that order."""
    thread = make_thread("Streaming now")
    run, _ = ledger.begin_run(thread=thread, model="gpt-4o-mini")
    ledger.append_events(run=run, events=timed((0.0, "step-started", {})))
    page = open_page(browser, live_server_asgi, viewer)
    page.add_init_script(
        "document.addEventListener('htmx:sseOpen', () => { window.sseOpen = true })"
    )
    held: list[tuple[Any, Any]] = []

    def hold(route: Any) -> None:
        # The first two fragment requests: a live update, then the final status.
        if route.request.headers.get("hx-target") and len(held) < 2:
            held.append((route, route.fetch()))  # rendered now, delivered when released
        else:
            route.continue_()

    page.goto(f"{live_server_asgi.url}/runs/{run.id}/")
    page.wait_for_function("window.sseOpen === true")
    page.route(f"**/runs/{run.id}/", hold)
    ledger.append_events(
        run=run,
        events=[
            {"seq": 2, "kind": "text-delta", "data": {"delta": "Hello"}, "at": timezone.now()},
            {"seq": 3, "kind": "step-finished", "data": {}, "at": timezone.now()},
        ],
    )
    while not held:  # the live update, rendered while the run streams
        page.wait_for_timeout(20)
    ledger.commit_run(run=run)
    while len(held) < 2:  # the final status, rendered once the run is committed
        page.wait_for_timeout(20)
    route, response = held[0]
    route.fulfill(response=response)
    page.wait_for_function("document.querySelector('#live .tseg-text') !== null")
    assert "streaming" in page.locator(".run-status").inner_text().lower()
    route, response = held[1]
    route.fulfill(response=response)
    page.wait_for_function(
        "document.querySelector('.run-status').innerText.toLowerCase().includes('committed')"
    )
    assert page.locator(".run-status .pulse").count() == 0
    assert page.locator("#run-trace [hx-trigger], [sse-connect]").count() == 0
    screenshot(page, "17-run-trace-committed", full_page=False)
    page.context.close()
