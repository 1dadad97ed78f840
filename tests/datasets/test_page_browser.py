"""Browser test of the datasets page: Playwright with Debian's Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.base import Team
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.datasets.conftest import regenerated_thread

pytestmark = BROWSER_TESTS


def test_the_filters_update_the_counts_and_the_download_gives_the_file(
    browser: Any,
    live_server: Any,
    team: Team,
) -> None:
    regenerated_thread(team)
    page = open_page(browser, live_server, team.viewer)
    errors: list[str] = []

    def on_console(message: Any) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.goto(live_server.url + "/p/alpha/")
    page.locator("#content").get_by_role("link", name="Datasets").click()  # the project page's link
    page.wait_for_url("**/p/alpha/datasets/")
    counts = page.locator(".dataset-counts")
    assert "2 rows from 1 thread and 1 fork point" in " ".join(counts.inner_text().split())
    screenshot(page, "60-datasets")
    page.select_option("select[name=kind]", "sft")
    page.wait_for_selector(".dataset-counts:has-text('sft · openai')")
    assert " ".join(counts.inner_text().split()).startswith("1 row from 1 thread")
    assert "kind=sft" in page.url
    with page.expect_download() as download:
        page.get_by_role("link", name="Download JSON Lines").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert [row["messages"][-1]["content"] for row in rows] == ["Six."]
    assert errors == []
