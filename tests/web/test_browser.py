"""Browser tests: Playwright driving Debian's Chromium against a live server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from tests.api import conftest as api_fixtures
from tests.factories import events, make_thread
from tests.web.conftest import long_thread
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.models import Message, Run, Thread

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# uvicorn on the test database: the live run timeline needs SSE, which needs ASGI.
live_server_asgi = api_fixtures.live_server_asgi

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
        reason="Debian's Chromium is not installed (apt-get install chromium); CI installs it",
    ),
]


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium (no browser download: the system one)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop; the ORM calls in these tests are still sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


def _page(browser: Any, live_server: Any, user: Any, **options: Any) -> Any:
    client = Client()
    client.force_login(user)
    options.setdefault("viewport", {"width": 1180, "height": 900})
    context = browser.new_context(**options)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    return page


def _shot(page: Any, name: str, full_page: bool = True) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def test_a_reader_opens_a_thread_and_switches_between_alternatives(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    thread = Thread.objects.get(title__startswith="Haiku")
    page = _page(browser, live_server, viewer)
    page.goto(live_server.url + "/")
    _shot(page, "01-thread-list")
    page.click(f"a[href='/t/{thread.id}/']")
    page.wait_for_selector("article.msg")
    assert page.locator(".msg.role-assistant .md").inner_text().startswith("Each reader")
    _shot(page, "02-conversation")
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
    _shot(page, "03-alternative-branch")
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
    page = _page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/tree/")
    assert page.locator(".tree-row").count() >= 5
    _shot(page, "04-tree-map")
    page.locator(f".tree-row a[href*='leaf={target.id}']").click()
    page.wait_for_selector(f"#m-{target.id}")
    assert page.locator(".branch-banner").is_visible()
    _shot(page, "05-branch-from-tree", full_page=False)


def test_a_reader_loads_earlier_messages_of_a_long_thread(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    thread = long_thread(130)
    page = _page(browser, live_server, viewer)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    assert page.locator("article.msg").count() == 50
    page.locator(".pager-earlier a").click()
    page.wait_for_function("document.querySelectorAll('article.msg').length === 100")
    page.locator(".pager-earlier a").click()
    page.wait_for_function("document.querySelectorAll('article.msg').length === 130")
    assert page.locator(".pager-earlier").count() == 0
    assert page.locator("article.msg").first.inner_text().count("message number 0") == 1
    page.keyboard.press("j")
    _shot(page, "06-long-thread-loaded", full_page=False)


def test_the_pages_work_at_360_pixels_in_dark_mode(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    page = _page(
        browser,
        live_server,
        viewer,
        viewport={"width": 360, "height": 780},
        color_scheme="dark",
    )
    page.goto(live_server.url + "/")
    _shot(page, "07-mobile-dark-list")
    tools = Thread.objects.get(title__startswith="Weather")
    page.goto(f"{live_server.url}/t/{tools.id}/")
    page.locator("details.tool summary").first.click()
    page.locator("details.reasoning summary").first.click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    _shot(page, "08-mobile-dark-conversation")
    run = Run.objects.filter(thread=tools).order_by("-id").first()
    assert run is not None
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    _shot(page, "09-mobile-dark-run")


def test_the_run_timeline_shows_events_and_the_multi_agent_thread_reads_well(
    browser: Any, live_server: Any, viewer: Any
) -> None:
    load_demo()
    page = _page(browser, live_server, viewer)
    agents = Thread.objects.get(title__startswith="Planner")
    page.goto(f"{live_server.url}/t/{agents.id}/")
    page.locator("details.tool summary").first.click()
    _shot(page, "10-multi-agent")
    run = Run.objects.filter(thread__title__startswith="Weather").order_by("-id").first()
    assert run is not None
    page.goto(f"{live_server.url}/runs/{run.id}/")
    assert page.locator(".waterfall tr.kind-tool").count() == 1
    page.locator(".raw-log > summary").click()
    page.locator("details.event").nth(3).locator("summary").click()
    _shot(page, "11-run-timeline")


def test_the_run_timeline_of_a_streaming_run_updates_live_over_sse(
    browser: Any, live_server_asgi: Any, viewer: Any
) -> None:
    # SSE needs the ASGI server; the stream layer here is this test, appending events.
    thread = make_thread("Streaming now")
    run, _ = ledger.begin_run(thread=thread, model="live-model")
    ledger.append_events(run=run, events=events(("message-start", {"role": "assistant"})))
    page = _page(browser, live_server_asgi, viewer)
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
    _shot(page, "12-run-timeline-live", full_page=False)
    ledger.commit_run(run=run)
    page.wait_for_function(
        "document.querySelector('.run-status').innerText.toLowerCase().includes('committed')"
    )
    assert page.locator(".run-status .pulse").count() == 0
    _shot(page, "13-run-timeline-committed", full_page=False)
    page.context.close()
