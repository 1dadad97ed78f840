"""The run page in a browser (issue 26): a run without timing and a tool-using run fit a phone,
their content is rendered like the conversation and the raw parts open without JavaScript."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.web.test_runs_page import _imported
from tests.web.test_trace_browser import _tool_run
from transcripts.models import Run

pytestmark = BROWSER_TESTS


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_untimed_import_reads_well_on_a_phone(
    browser: Any, live_server: Any, viewer: Any, scheme: str
) -> None:
    run = Run.objects.get(thread=_imported())
    page = open_page(
        browser, live_server, viewer, viewport={"width": 390, "height": 844}, color_scheme=scheme,
        java_script_enabled=False,
    )  # fmt: skip
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.locator("h1").inner_text() == "Run 1 of 1 · import"
    assert page.locator(".run-duration").inner_text() == "no timing recorded"
    assert page.locator(".trace-bar").count() == 0
    assert page.locator(".run-content .role-assistant strong").inner_text() == "Yes"
    page.locator(".raw-content > summary").click()  # a <details>: no script needed
    assert page.locator(".raw-content .tseg-text").first.is_visible()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    screenshot(page, f"runs-untimed-390-{scheme}")
    page.context.close()


def test_a_tool_run_names_its_fork_point_and_fits_390_pixels(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    run = _tool_run()
    page = open_page(browser, live_server, viewer, viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/runs/{run.id}/")
    fork = page.locator(".fork-point a")
    assert fork.inner_text().startswith("after message 1 · user: Should I bike to work")
    assert page.locator(".run-content .tool-card").count() == 1
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    screenshot(page, "runs-tool-390")
    page.context.close()
