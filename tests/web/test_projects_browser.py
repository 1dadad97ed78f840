"""Browser test of the project switcher: Playwright with Debian's Chromium."""

from __future__ import annotations

from typing import Any

from tests.base import Team
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import make_thread
from transcripts.ledger.projects import set_member

pytestmark = BROWSER_TESTS


def test_the_switcher_changes_the_list(
    browser: Any,
    live_server: Any,
    team: Team,
) -> None:
    make_thread("Pelican migration notes", project=team.alpha)
    make_thread("Walrus feeding schedule", project=team.beta)
    set_member(project=team.beta, user=team.editor, role="viewer")
    page = open_page(browser, live_server, team.editor)
    page.goto(live_server.url + "/")
    titles = page.locator(".thread-title")
    assert titles.all_inner_texts() == ["Pelican migration notes"]
    page.locator(".project-menu summary").click()
    screenshot(page, "40-project-switcher", full_page=False)
    page.get_by_role("button", name="Beta").click()
    page.wait_for_selector("text=Walrus feeding schedule")
    assert titles.all_inner_texts() == ["Walrus feeding schedule"]
    assert "Beta" in page.locator(".project-menu summary").inner_text()
    # Remembered: the list opens on beta again.
    page.goto(live_server.url + "/")
    assert titles.all_inner_texts() == ["Walrus feeding schedule"]
    page.locator(".project-menu summary").click()
    page.get_by_role("link", name="Project page and members").click()
    page.wait_for_url("**/p/beta/")
    assert "your role: viewer" in page.locator(".page-head").inner_text().lower()


def test_the_project_page_and_the_switcher_fit_a_360_pixel_screen(
    browser: Any,
    live_server: Any,
    team: Team,
) -> None:
    team.token(team.alpha, "ingest")
    page = open_page(
        browser,
        live_server,
        team.owner,
        viewport={"width": 360, "height": 780},
        color_scheme="dark",
    )
    page.goto(live_server.url + "/p/alpha/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "41-project-page-narrow")
    page.locator(".site-menu > summary").click()  # a phone's header folds into a Menu
    page.locator(".project-menu summary").click()
    assert page.get_by_role("button", name="Alpha").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    page.locator("form[action='/p/alpha/tokens/'] input[name=name]").fill("narrow agent")
    page.locator("form[action='/p/alpha/tokens/'] input[value=read]").check()
    page.get_by_role("button", name="Create token").click()
    page.wait_for_selector("#new-token-value")
    assert page.locator("#new-token-value").inner_text().startswith("tr_")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "42-new-token-narrow")
