"""Share links in Chromium: an editor shares the alternative branch being read, copies the
link, and a browser without a session reads exactly that branch under the strict CSP."""

from __future__ import annotations

from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, last_message, make_thread, say
from transcripts.ledger.default_project import default_project
from transcripts.models import ShareLink

pytestmark = BROWSER_TESTS
FIRST = "Marseille, said the first answer"
SECOND = "Paris, said the second answer"


def test_an_editor_shares_the_branch_being_read_and_a_stranger_reads_only_it(
    browser: Any, live_server: Any, editor: Any
) -> None:
    thread = make_thread("Capitals", project=default_project())
    prompt = last_message(ask(thread, "Which city is the capital of France?"))
    first = last_message(say(thread, FIRST))
    say(thread, SECOND, fork_from=prompt.id)
    page = open_page(browser, live_server, editor)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/t/{thread.id}/")

    # Switch to the first answer with htmx, then share what is read.
    page.locator("article.msg.role-assistant a.sib-prev").click()
    page.wait_for_selector(".branch-banner")
    page.locator("a.share-open").click()
    page.wait_for_selector("#share-slot form.share-form")
    assert "Marseille" in page.locator("#share-slot q.share-leaf").inner_text()
    page.select_option("#share-slot select[name=expires]", "7")
    page.locator("#share-slot form.share-form button[type=submit]").click()
    page.wait_for_selector("#share-slot .new-share")
    screenshot(page, "80-share-link-created", full_page=False)
    copy = page.locator("#share-slot .new-share button[data-copy]")
    url = copy.get_attribute("data-copy")
    assert url is not None and "/s/" in url
    copy.click()
    page.wait_for_function(
        "document.querySelector('#share-slot .new-share button').textContent === 'Copied'"
    )
    assert page.locator("#share-slot .share-table tbody tr").count() == 1
    share = ShareLink.objects.get()
    assert share.leaf_id == first.id

    page.locator("#share-slot a.share-close").click()
    assert page.locator("#share-slot *").count() == 0

    stranger = browser.new_context().new_page()
    stranger_errors: list[str] = []
    stranger.on("console", lambda m: stranger_errors.append(m.text) if m.type == "error" else None)
    stranger.goto(url)
    assert FIRST in stranger.locator("main").inner_text()
    assert SECOND not in stranger.content()
    screenshot(stranger, "81-shared-page")

    assert not errors, errors
    assert not stranger_errors, stranger_errors
