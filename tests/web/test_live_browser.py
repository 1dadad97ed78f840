"""Browser tests of live pages (issue 27): Chromium against uvicorn, with another client (the
API, with a token) beginning threads and runs while the page is open."""

from __future__ import annotations

import time
from typing import Any

import httpx
from django.contrib.auth.models import User

from tests.a11y import audit, overflow
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import ask, last_message, make_run, make_thread, say
from tests.live_server import LiveServer
from transcripts import ledger
from transcripts.ledger.default_project import default_project
from transcripts.ledger.tokens import issue_token

pytestmark = BROWSER_TESTS

ARRIVES_WITHIN = 2.0  # seconds from the API's answer to the page showing it


def api(server: LiveServer) -> httpx.Client:
    """An agent: an API client of the default project (ingest and read)."""
    _, raw = issue_token(name="agent", scopes=("ingest", "read"), project=default_project())
    return httpx.Client(
        base_url=server.url + "/api/v1", headers={"Authorization": f"Bearer {raw}"}, timeout=10
    )


def begin(agent: httpx.Client, thread_id: str, **body: Any) -> str:
    """Begin a run over the API; its id."""
    response = agent.post(f"/threads/{thread_id}/runs", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def stream_words(agent: httpx.Client, run_id: str, text: str, start: int = 1) -> int:
    """Append text as one delta per word; the next seq."""
    for seq, word in enumerate(text.split(), start):
        event = {"seq": seq, "kind": "text-delta", "data": {"delta": word + " "}}
        assert agent.post(f"/runs/{run_id}/events", json={"events": [event]}).status_code == 200
        start = seq + 1
    return start


def waited(page: Any, selector: str, name: str, within: float = ARRIVES_WITHIN) -> float:
    """Seconds until selector is visible on page (fails, with a screenshot, past within)."""
    started = time.monotonic()
    try:
        page.wait_for_selector(selector, state="visible", timeout=within * 1000)
    except Exception:
        screenshot(page, f"debug-live-{name}")
        raise
    return time.monotonic() - started


def test_a_run_the_api_begins_after_the_page_loaded_streams_in_and_commits(
    browser: Any, live_server_asgi: LiveServer, editor: User
) -> None:
    thread = make_thread("Live conversation")
    ask(thread, "First question")
    say(thread, "First answer")
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    page.wait_for_function("window.htmx !== undefined")
    page.wait_for_selector("[data-live-open]", state="attached")  # the page's stream listens
    time.sleep(0.2)
    with api(live_server_asgi) as agent:
        run_id = begin(agent, thread.id)
        waited(page, f"#run-{run_id}", "conversation-begin")
        stream_words(agent, run_id, "a second answer streams in")
        page.wait_for_function(
            f"document.querySelector('#run-{run_id}').innerText.includes('second answer')",
            timeout=5000,
        )
        assert agent.post(f"/runs/{run_id}/commit").status_code == 200
    page.wait_for_selector(f"#run-{run_id}", state="detached", timeout=5000)
    answers = page.locator("#conversation article.msg.role-assistant").all_inner_texts()
    assert "a second answer streams in" in answers[-1]
    assert "First answer" in page.inner_text("#conversation")
    screenshot(page, "live-conversation-committed")


def test_a_run_that_commits_on_another_branch_keeps_the_readers_place(
    browser: Any, live_server_asgi: LiveServer, editor: User
) -> None:
    thread = make_thread("Branching live")
    question = last_message(ask(thread, "Which way?"))
    first = last_message(say(thread, "Left, I think"))
    ask(thread, "Why left?")
    say(thread, "Because the river")
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    page.wait_for_function("window.htmx !== undefined")
    page.wait_for_selector("[data-live-open]", state="attached")
    time.sleep(0.2)
    with api(live_server_asgi) as agent:
        run_id = begin(agent, thread.id, forkFromMessageId=question.id)
        waited(page, f"#run-{run_id}", "branch-begin")
        page.fill("form.reply-box textarea", "half a reply the reader is typing")
        stream_words(agent, run_id, "Right after all")
        assert agent.post(f"/runs/{run_id}/commit").status_code == 200
    waited(page, ".live-committed", "branch-notice", within=5)
    assert page.input_value("form.reply-box textarea") == "half a reply the reader is typing"
    assert "Because the river" in page.inner_text("#conversation")
    page.wait_for_function(
        f"(document.querySelector('#m-{first.id} .sib-count') || {{}}).textContent === '1/2'",
        timeout=5000,
    )
    screenshot(page, "live-conversation-other-branch")
    page.set_viewport_size({"width": 390, "height": 844})
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert audit(page, include=".run-live") == [], scheme
        assert overflow(page) == 0, scheme
    screenshot(page, "live-conversation-other-branch-390-dark")
    page.click(".live-committed a")
    page.wait_for_selector(".live-committed", state="detached")
    assert "Right after all" in page.inner_text("#conversation")


def test_the_list_shows_new_threads_on_top_and_updates_a_row_in_place(
    browser: Any, live_server_asgi: LiveServer, editor: User
) -> None:
    older = make_thread("An older thread")
    ask(older, "Anything")
    make_thread("The newest before loading")
    page = open_page(browser, live_server_asgi, editor)
    page.goto(live_server_asgi.url + "/")
    page.wait_for_selector("[data-live-open]", state="attached")
    time.sleep(0.2)
    with api(live_server_asgi) as agent:
        created = agent.post("/threads", json={"title": "Made by an agent"})
        assert created.status_code == 201
        waited(page, "#results tr.thread-row:first-child >> text=Made by an agent", "list-new")
        row = f'#results a[href$="/t/{older.id}/"]'
        page.eval_on_selector(row, "a => a.closest('tr').dataset.seen = '1'")
        run_id = begin(agent, older.id)
        failed = agent.post(f"/runs/{run_id}/fail", json={"error": {"message": "boom"}})
        assert failed.status_code == 200
    waited(page, "#results tr.thread-row:first-child >> text=An older thread", "list-activity")
    page.wait_for_function(f"!document.querySelector('{row}').closest('tr').dataset.seen")
    # The redrawn row says, in words, that its last run failed.
    badge = page.locator(f"#thread-{older.id} .tag", has_text="failed")
    badge.wait_for()
    assert page.locator("#live-bar").is_hidden()
    screenshot(page, "live-list")


def test_a_filtered_list_never_shows_a_thread_its_filter_excludes(
    browser: Any, live_server_asgi: LiveServer, editor: User
) -> None:
    page = open_page(browser, live_server_asgi, editor)
    page.goto(live_server_asgi.url + "/?failed=on")
    page.wait_for_selector("[data-live-open]", state="attached")
    time.sleep(0.2)
    plain = make_thread("Nothing failed here")
    make_run(plain, commit=False)
    failing = make_thread("This one failed")
    ledger.fail_run(run=make_run(failing, commit=False), error={"message": "boom"})
    waited(page, "#live-bar >> text=1 new", "list-filtered")
    page.set_viewport_size({"width": 390, "height": 844})
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert audit(page, include="#live-bar") == [], scheme
        assert overflow(page) == 0, scheme
    screenshot(page, "live-list-filtered-390")
    assert "Nothing failed here" not in page.inner_text("main")
    assert "This one failed" not in page.inner_text("#results")
    page.click("#live-bar a")
    page.wait_for_selector("#results >> text=This one failed")
    assert "Nothing failed here" not in page.inner_text("#results")


def test_a_row_leaves_a_filtered_list_when_its_thread_stops_passing(
    browser: Any, live_server_asgi: LiveServer, editor: User
) -> None:
    streaming = make_thread("Streaming now")
    run = make_run(streaming, commit=False)
    page = open_page(browser, live_server_asgi, editor)
    page.goto(live_server_asgi.url + "/?status=live")
    page.wait_for_selector("#results >> text=Streaming now")
    page.wait_for_selector("[data-live-open]", state="attached")
    time.sleep(0.2)
    ledger.fail_run(run=run, error={"message": "boom"})
    page.wait_for_selector(
        "#results >> text=Streaming now", state="detached", timeout=ARRIVES_WITHIN * 1000
    )
