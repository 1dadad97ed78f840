"""Browser test of how tools, data, hidden messages and inline images read in a conversation."""

from __future__ import annotations

import json
from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import make_run, make_thread
from tests.production.conftest import effective_settings, production_env
from tests.web.test_parts import CHATGPT, PNG
from transcripts import interchange
from transcripts.ledger.default_project import default_project
from transcripts.models import Thread

pytestmark = BROWSER_TESTS

# Runs in every document before its own scripts: CSP violations become a list on the page.
WATCH_VIOLATIONS = """
window.violations = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


def _tool_thread() -> Any:
    thread = make_thread("Forecast with tools")
    hidden = {"hidden": True}
    long_page = "\n".join(f"line {i}: the forecast page says something" for i in range(400))
    make_run(
        thread,
        ("message", {"role": "system", "parts": [{"type": "text", "text": "Be brief."}],
                     "metadata": hidden}),
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Weather in Paris?"}]}),
        ("message", {"role": "assistant", "parts": [
            {"type": "tool-call", "toolCallId": "w1", "toolName": "get_forecast",
             "input": {"city": "Paris", "hours": [7, 8, 9]}}]}),
        ("message", {"role": "tool", "parts": [
            {"type": "tool-result", "toolCallId": "w1", "output": {"temp": 18, "sky": "cloudy"}}]}),
        ("message", {"role": "assistant", "parts": [
            {"type": "tool-call", "toolCallId": "p1", "toolName": "fetch_page",
             "input": {"url": "https://weather.example/paris"}}]}),
        ("message", {"role": "tool", "parts": [
            {"type": "tool-result", "toolCallId": "p1", "output": long_page},
            {"type": "file", "mimeType": "image/png", "name": "radar.png", "url": PNG}]}),
        ("text-delta", {"delta": "It is **18 °C** and cloudy."}),
        ("data-weather", {"city": "Paris", "source": {"name": "weather.example", "age_s": 120}}),
    )  # fmt: skip
    return thread


def test_a_tool_using_conversation_reads_as_cards_with_results_and_an_inline_image(
    browser: Any,
    live_server: Any,
    viewer: Any,
    settings: Any,
) -> None:
    # The production policy: the inline image must load under it.
    settings.TRANSCRIPTS_CSP = effective_settings(production_env(), "TRANSCRIPTS_CSP")[
        "TRANSCRIPTS_CSP"
    ]
    thread = _tool_thread()
    page = open_page(browser, live_server, viewer)
    page.add_init_script(WATCH_VIOLATIONS)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    cards = page.locator("details.tool-card")
    assert cards.count() == 2
    forecast = cards.nth(0)
    # Short input and result: open, in the call's card.
    assert forecast.locator(".tool-section").nth(0).is_visible()
    assert "cloudy" in forecast.locator(".tool-section").nth(1).inner_text()
    assert page.locator("text=shown with its call").count() == 0
    # The long page folds behind its size; opening it shows it.
    fold = cards.nth(1).locator("details.tool-fold")
    assert "Show" in fold.locator("summary").inner_text()
    assert "lines" in fold.locator("summary").inner_text()
    assert not fold.locator("pre").is_visible()
    fold.locator("summary").click()
    assert fold.locator("pre").is_visible()
    # The inline PNG is decoded and shown, capped by the stylesheet.
    image = page.locator("figure.file-preview img")
    image.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelector('figure.file-preview img').complete")
    assert page.evaluate("document.querySelector('figure.file-preview img').naturalWidth") == 1
    # data-weather shows its content as key/value lists.
    data = page.locator(".data-card")
    assert "weather.example" in data.inner_text() and "age_s" in data.inner_text()
    # The hidden system message is one line, opened on demand.
    group = page.locator("details.hidden-group")
    assert group.locator("> summary").inner_text().startswith("1 hidden message")
    assert not page.locator("text=Be brief.").is_visible()
    group.locator("> summary").click()
    assert page.locator("text=Be brief.").is_visible()
    assert page.evaluate("window.violations") == []
    screenshot(page, "30-tools-and-data")
    mobile = open_page(
        browser, live_server, viewer, viewport={"width": 390, "height": 844}, color_scheme="dark"
    )
    mobile.goto(f"{live_server.url}/t/{thread.id}/")
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(mobile, "31-tools-and-data-mobile-dark")
    # A real ChatGPT export: two "n hidden" lines, the python call with its output, no noise.
    interchange.import_data(json.loads(CHATGPT.read_text()), "chatgpt", project=default_project())
    imported = Thread.objects.get(title="Plotting a sine wave")
    page.goto(f"{live_server.url}/t/{imported.id}/")
    assert page.locator("details.hidden-group").count() == 2
    assert page.locator("text=/Hidden message/").count() == 0
    assert page.locator("text=inline data, not linked").count() == 0
    page.locator("details.hidden-group").nth(1).locator("> summary").click()
    assert "Figure size 640x480" in page.locator("details.tool-card").inner_text()
    assert page.evaluate("window.violations") == []
    screenshot(page, "32-chatgpt-import")
