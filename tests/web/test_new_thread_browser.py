"""Browser tests of New thread: Chromium against uvicorn (SSE needs ASGI) and a real worker."""

from __future__ import annotations

import time
from typing import Any

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, make_thread
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = BROWSER_TESTS

WIDE = {"width": 1360, "height": 900}
LIVE_TEXT = (
    "Array.from(document.querySelectorAll('.run-live .msg-body'))"
    ".reduce((n, body) => n + body.innerText.length, 0)"
)
QUESTION = "Should I bike to work when it drizzles in Amsterdam?"


def _watch_until_committed(page: Any, timeout: float = 60.0) -> list[int]:
    """The lengths of the streamed text seen until the live block goes (the run committed)."""
    seen: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.locator(".run-live").count() == 0 and seen:
            return seen
        length = page.evaluate(LIVE_TEXT)
        if length and (not seen or length != seen[-1]):
            seen.append(length)
        time.sleep(0.05)
    screenshot(page, "debug-new-thread")
    raise AssertionError(f"the answer did not commit in {timeout}s (saw {seen})")


def test_a_new_thread_from_the_header_streams_its_answer(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    earlier = make_thread("An earlier thread", project=default_project())
    ask(earlier, "What was this about?")
    start_worker()
    page = open_page(browser, live_server_asgi, editor, viewport=WIDE)
    page.goto(live_server_asgi.url + "/")
    screenshot(page, "60-thread-list-previews", full_page=False)
    page.locator(".topbar a.new-thread-link").click()
    page.wait_for_selector("form.new-thread-form")
    # Keyboard first: the message box has the focus (once the page has loaded).
    page.wait_for_function("document.activeElement && document.activeElement.name === 'text'")
    page.keyboard.type(QUESTION)
    page.locator("#id_title").fill("Bike in the drizzle")
    page.select_option("#id_choice", "demo:demo-1")
    screenshot(page, "61-new-thread-form", full_page=False)
    page.locator("form.new-thread-form button[type=submit]").click()

    page.wait_for_selector(".run-live.is-open")
    thread = Thread.objects.get(title="Bike in the drizzle")
    assert page.url.startswith(f"{live_server_asgi.url}/t/{thread.id}/")
    assert QUESTION in page.locator(".msg.role-user .md").inner_text()
    page.wait_for_function(f"({LIVE_TEXT}) > 0", timeout=20_000)
    screenshot(page, "62-new-thread-streaming", full_page=False)
    lengths = _watch_until_committed(page)
    assert len(lengths) >= 2, f"the answer should arrive in several steps, saw {lengths}"

    run = Run.objects.get(thread=thread, generator="demo")
    assert run.status == RunStatus.COMMITTED
    # The last message of the answer (the demo may call a tool first).
    answer = Message.objects.filter(run=run, role="assistant").order_by("-position").first()
    assert answer is not None and answer.active
    card = page.locator(f"#m-{answer.id}")
    card.wait_for()
    assert card.locator(".msg-body").inner_text().strip()
    # Beside it, the project's recent threads with this one marked.
    current = page.locator(".recent-threads a[aria-current=page]")
    assert current.is_visible()
    assert "Bike in the drizzle" in current.inner_text()
    assert "just now" in current.inner_text()
    assert page.locator(".recent-threads", has_text="An earlier thread").is_visible()
    screenshot(page, "63-new-thread-answered", full_page=False)

    # The list now previews the new thread's question.
    page.goto(live_server_asgi.url + "/")
    row = page.locator(".thread-row", has_text="Bike in the drizzle")
    assert row.locator(".thread-preview").inner_text() == QUESTION
    assert row.locator("time").inner_text() == "just now"


def test_the_new_thread_form_refuses_an_empty_message_and_keeps_the_rest(
    browser: Any, live_server: Any, editor: Any
) -> None:
    page = open_page(browser, live_server, editor)
    page.goto(live_server.url + "/new/")
    page.locator("#id_title").fill("Kept title")
    # Spaces pass the browser's own check (the box is not empty); the server refuses them.
    page.locator("#id_text").fill("   ")
    page.locator("form.new-thread-form button[type=submit]").click()
    page.wait_for_selector("#text-errors")
    assert "The first message is empty" in page.locator("#text-errors").inner_text()
    assert page.locator("#id_title").input_value() == "Kept title"
    assert not Thread.objects.exists()
    screenshot(page, "64-new-thread-refused", full_page=False)


def test_narrow_screens_leave_the_recent_threads_out(
    browser: Any, live_server: Any, editor: Any
) -> None:
    thread = make_thread("Phone reading", project=default_project())
    ask(thread, "Short question")
    page = open_page(browser, live_server, editor, viewport={"width": 360, "height": 780})
    page.goto(f"{live_server.url}/t/{thread.id}/")
    page.wait_for_selector("article.msg")
    assert not page.locator(".recent-threads").is_visible()
    assert page.locator(".topbar a.new-thread-link").is_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360, f"the page scrolls sideways ({width}px)"
    screenshot(page, "65-conversation-narrow", full_page=False)


def test_pages_load_their_icon_without_a_console_error(
    browser: Any, live_server_asgi: Any, django_user_model: Any
) -> None:
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    page = open_page(browser, live_server_asgi, admin)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on(
        "response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    icons: list[str] = []
    page.on("response", lambda r: icons.append(r.url) if "favicon" in r.url else None)
    for path in ("/", "/new/", "/admin/", "/api/v1/docs"):
        page.goto(live_server_asgi.url + path, wait_until="networkidle")
    assert not problems, problems
    assert any(url.endswith("/static/img/favicon.svg") for url in icons), icons
    assert page.locator("a", has_text="API docs").count() == 0  # the docs page is Swagger's own
    page.goto(live_server_asgi.url + "/")
    page.locator(".topnav a", has_text="API docs").click()
    page.wait_for_url("**/api/v1/docs")
