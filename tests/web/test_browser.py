"""Browser tests: Playwright driving Debian's Chromium against a live server (pytest-django's,
or uvicorn's where the live run timeline needs SSE, which needs ASGI)."""

from __future__ import annotations

from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import events, make_thread
from tests.web.conftest import long_thread
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.models import Message, Run, Thread

pytestmark = BROWSER_TESTS


def test_a_reader_opens_a_thread_and_switches_between_alternatives(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = open_page(browser, live_server, viewer)
    page.goto(live_server.url + "/")
    screenshot(page, "01-thread-list")
    page.click(f"a[href='/t/{thread.id}/']")
    page.wait_for_selector("article.msg")
    assert page.locator(".msg.role-assistant .md").inner_text().startswith("Each reader")
    screenshot(page, "02-conversation")
    # The first prompt has two alternatives: go to the original one.
    page.locator("article.msg.role-user a.sib-prev").click()
    page.wait_for_selector(".branch-banner")
    assert "leaf=" in page.url
    assert (
        page.locator(".msg.role-user .md")
        .inner_text()
        .startswith("Write a haiku about PostgreSQL.")
    )
    answer = page.locator(".msg.role-assistant")
    assert answer.locator(".sib-count").inner_text() == "3/3"
    screenshot(page, "03-alternative-branch")
    # ← on the keyboard goes to the previous alternative of the answer.
    answer.click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelector('.msg.role-assistant .sib-count').textContent === '2/3'"
    )
    assert "Tables wake" in page.locator(".msg.role-assistant .md").inner_text()
    page.go_back()
    page.wait_for_function(
        "document.querySelector('.msg.role-assistant .sib-count').textContent === '3/3'"
    )


def test_a_reader_opens_the_tree_map_and_clicks_a_node(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    superseded = Run.objects.filter(thread=thread, status="superseded").order_by("id").first()
    assert superseded is not None
    target = Message.objects.get(run=superseded)
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    assert page.locator(".tree-row").count() >= 5
    screenshot(page, "04-tree-map")
    page.locator(f".tree-row a[href*='leaf={target.id}']").click()
    page.wait_for_selector(f"#m-{target.id}")
    assert page.locator(".branch-banner").is_visible()
    screenshot(page, "05-branch-from-tree", full_page=False)


def test_a_reader_loads_earlier_messages_of_a_long_thread(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    thread = long_thread(130)
    page = open_page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    assert page.locator("article.msg").count() == 50
    page.locator(".pager-earlier a").click()
    page.wait_for_function("document.querySelectorAll('article.msg').length === 100")
    page.locator(".pager-earlier a").click()
    page.wait_for_function("document.querySelectorAll('article.msg').length === 130")
    assert page.locator(".pager-earlier").count() == 0
    assert page.locator("article.msg").first.inner_text().count("message number 0") == 1
    page.keyboard.press("j")
    screenshot(page, "06-long-thread-loaded", full_page=False)


def test_the_pages_work_at_360_pixels_in_dark_mode(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    page = open_page(
        browser,
        live_server,
        viewer,
        viewport={"width": 360, "height": 780},
        color_scheme="dark",
    )
    page.goto(live_server.url + "/")
    screenshot(page, "07-mobile-dark-list")
    tools = Thread.objects.get(title__startswith="Weather")
    page.goto(f"{live_server.url}/t/{tools.id}/")
    page.locator("details.tool summary").first.click()
    page.locator("details.reasoning summary").first.click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "08-mobile-dark-conversation")
    run = Run.objects.filter(thread=tools).order_by("-id").first()
    assert run is not None
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    screenshot(page, "09-mobile-dark-run")


def test_the_run_timeline_shows_events_and_the_multi_agent_thread_reads_well(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    page = open_page(browser, live_server, viewer)
    agents = Thread.objects.get(title__startswith="Planner")
    page.goto(f"{live_server.url}/t/{agents.id}/")
    page.locator("details.tool summary").first.click()
    screenshot(page, "10-multi-agent")
    run = Run.objects.filter(thread__title__startswith="Weather").order_by("-id").first()
    assert run is not None
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.locator(".waterfall tr.kind-tool").count() == 1
    page.locator(".raw-log > summary").click()
    page.locator("details.event").nth(3).locator("summary").click()
    screenshot(page, "11-run-timeline")


def test_the_run_timeline_of_a_streaming_run_updates_live_over_sse(
    browser: Any, live_server_asgi: Any, viewer: Any
) -> None:
    # SSE needs the ASGI server; the stream layer here is this test, appending events.
    thread = make_thread("Streaming now")
    run, _ = ledger.begin_run(thread=thread, model="live-model")
    ledger.append_events(run=run, events=events(("message-start", {"role": "assistant"})))
    page = open_page(browser, live_server_asgi, viewer)
    page.goto(f"{live_server_asgi.url}/runs/{run.id}/")
    assert "streaming" in page.locator(".run-status").inner_text().lower()
    assert page.locator(".tseg-of-text").count() == 0
    page.wait_for_function("document.querySelector('[sse-connect]') !== null")
    page.wait_for_timeout(500)  # the EventSource connects
    for n in range(4):
        ledger.append_events(
            run=run, events=events(("text-delta", {"delta": f"word{n} "}), start=n + 2)
        )
    # The trace follows, the deltas merged into one segment.
    page.wait_for_function(
        "(document.querySelector('.tseg-of-text .tseg-text') || {}).textContent"
        " === 'word0 word1 word2 word3 '"
    )
    assert page.locator(".tseg-of-text").count() == 1
    screenshot(page, "12-run-timeline-live", full_page=False)
    ledger.commit_run(run=run)
    page.wait_for_function(
        "document.querySelector('.run-status').innerText.toLowerCase().includes('committed')"
    )
    assert page.locator(".run-status .pulse").count() == 0
    screenshot(page, "13-run-timeline-committed", full_page=False)
    page.context.close()
