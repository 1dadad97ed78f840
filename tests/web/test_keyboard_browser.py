"""The keyboard and screen readers (issue 26): every message action by keyboard alone, focus on
the new answer (or the error) when a run ends, polite announcements of a streaming answer's
start and end (never its tokens), and the `?` overlay with its shortcuts, each of which works."""

from __future__ import annotations

import re
from typing import Any

from tests.a11y import audit
from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import events, make_run
from tests.generation.support import wait_for
from tests.web.test_a11y_browser import seed
from transcripts import ledger
from transcripts.demo import load_demo
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = BROWSER_TESTS

# What the focused element is called: its accessible label, else its text.
FOCUSED = (
    "() => { const e = document.activeElement;"
    " return (e.getAttribute('aria-label') || e.textContent || '').trim(); }"
)
# Records every text the status region says, in window.said.
LISTEN = """() => {
  window.said = [];
  const region = document.getElementById('announcer');
  new MutationObserver(() => { if (region.textContent) window.said.push(region.textContent); })
    .observe(region, {childList: true, characterData: true, subtree: true});
}"""
# The streaming text is in no live region (which would read it token by token).
LIVE_ANCESTORS = """() => Array.from(document.querySelectorAll('.run-live .msg-body')).some(b =>
  b.closest('[aria-live], [role=log], [role=status], [role=alert]'))"""


def _admin() -> Any:
    admin = make_user("keys-admin", is_staff=True)
    set_member(project=default_project(), user=admin, role="admin")
    return admin


def _tab_through(page: Any, article: Any, limit: int = 40) -> list[str]:
    """The names of the controls Tab reaches inside article, from the article itself."""
    article.focus()
    names: list[str] = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        inside = article.evaluate("a => a.contains(document.activeElement)")
        if not inside:
            return names
        names.append(page.evaluate(FOCUSED))
    return names


def test_every_message_action_is_reachable_and_usable_by_keyboard(
    browser: Any, live_server: Any
) -> None:
    admin = _admin()
    url = live_server.url + seed(admin).urls["conversation-branches"]
    page = open_page(browser, live_server, admin)
    page.goto(url)
    answer = page.locator("article.msg.role-assistant").filter(has=page.locator(".switcher"))
    names = _tab_through(page, answer.first)
    for action in ("Copy text", "Regenerate", "Regenerate with another model", "Permalink",
                   "More actions", "Next alternative", "Compare"):  # fmt: skip
        assert action in names, f"{action} is not reached by Tab: {names}"
    restorable = page.locator("article.msg").filter(has=page.locator("button.btn-restore"))
    restore = restorable.first.locator("button.btn-restore").inner_text()
    assert restore in _tab_through(page, restorable.first)
    question = page.locator("article.msg.role-user").first
    assert "Edit" in _tab_through(page, question)

    # More actions opens with Enter, Escape closes it and gives the focus back to it.
    menu = answer.first.locator("details.msg-menu")
    menu.locator("> summary").focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "Report message…"
    page.keyboard.press("Escape")
    assert not menu.evaluate("d => d.open")
    assert page.evaluate(FOCUSED) == "More actions"
    # Enter on Report brings its form.
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    answer.first.locator(".report-slot form").wait_for()

    # Enter on a switcher link shows the next alternative, and the focus follows it.
    page.evaluate(LISTEN)
    answer.first.locator("a.sib-next").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "/leaf=/.test(location.search) && document.activeElement.matches('article.msg')"
    )
    # A screen reader hears where it landed.
    page.wait_for_function("window.said.some(s => /^Alternative \\d+ of \\d+$/.test(s))")
    screenshot(page, "kb-01-switched-by-keyboard", full_page=False)


def _weather() -> tuple[Thread, Message]:
    load_demo()
    thread = Thread.objects.get(title__startswith="Weather")
    return thread, Message.objects.get(thread=thread, depth=1, active=True)


def _weather_open(
    browser: Any, server: Any, start_worker: Any, editor: Any
) -> tuple[Any, Thread, Message]:
    """The weather thread open with a worker running, announcements recorded, and its first
    answer focused."""
    thread, first = _weather()
    start_worker()
    page = open_page(browser, server, editor)
    page.goto(f"{server.url}/t/{thread.id}/")
    page.evaluate(LISTEN)
    page.locator(f"#m-{first.id}").focus()
    return page, thread, first


def test_regenerate_by_r_announces_start_and_end_and_focuses_the_new_answer(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    page, thread, first = _weather_open(browser, live_server_asgi, start_worker, editor)
    page.keyboard.press("r")
    page.wait_for_selector(".run-live.is-open")
    page.wait_for_function("document.querySelector('.run-live .msg-body')", timeout=20_000)
    assert not page.evaluate(LIVE_ANCESTORS)
    assert not page.locator("#conversation[aria-live]").count()
    page.wait_for_function(
        "!document.querySelector('.run-live') && window.said.includes('Answer finished')",
        timeout=60_000,
    )
    new_run = Run.objects.exclude(pk=first.run_id).get(
        thread=thread, fork_from_id=first.parent_id, status=RunStatus.COMMITTED
    )
    last = new_run.messages.filter(role="assistant").order_by("-position")[0]
    assert page.evaluate("document.activeElement.id") == f"m-{last.id}"
    said = page.evaluate("window.said")
    # Debounced: at most the start and the end, never the tokens.
    assert said[-1] == "Answer finished" and len(said) <= 2, said
    assert set(said) <= {"Assistant is answering…", "Answer finished"}, said
    screenshot(page, "kb-02-regenerated-focused", full_page=False)


def test_edit_by_e_that_fails_focuses_and_announces_the_error(
    browser: Any, live_server_asgi: Any, start_worker: Any, editor: Any
) -> None:
    page, thread, first = _weather_open(browser, live_server_asgi, start_worker, editor)
    page.keyboard.press("e")  # on an answer: edits the question before it
    page.wait_for_function("document.activeElement.name === 'text'")  # the toggle event's
    page.keyboard.press("Control+a")
    page.keyboard.type("Will it snow in Oslo?")
    form = page.locator(f"#m-{first.parent_id} form.gen-form")
    assert form.locator("textarea[name=text]").evaluate("t => t === document.activeElement")
    form.locator("details.gen-options summary").click()
    form.locator("input[name=delayMs]").fill("150")
    form.locator("textarea[name=text]").focus()
    page.keyboard.press("Control+Enter")
    page.wait_for_function("document.querySelector('.run-live .msg-body')", timeout=20_000)
    page.wait_for_function("window.said.includes('Assistant is answering…')")
    streaming = Run.objects.filter(thread=thread, status=RunStatus.STREAMING)
    wait_for(streaming.exists, what="the edit's run streams")
    run = streaming.get()
    ledger.fail_run(run=run, error={"message": "the model went away", "code": "upstream"})
    page.wait_for_function("document.activeElement.matches('.run-failed')", timeout=20_000)
    page.wait_for_function("window.said.some(s => s.startsWith('Failed:'))")
    said = page.evaluate("window.said")
    assert said == ["Assistant is answering…", said[-1]] and "the model went away" in said[-1]
    screenshot(page, "kb-03-failed-focused", full_page=False)


def test_the_shortcuts_overlay_and_each_shortcut(browser: Any, live_server: Any) -> None:
    admin = _admin()
    urls = seed(admin).urls
    page = open_page(browser, live_server, admin)
    page.goto(live_server.url + urls["conversation-tools"])
    dialog = page.locator("dialog#shortcuts")
    # Typing "?", "j" or "/" in a field is just typing.
    page.locator("#reply-text").focus()
    page.keyboard.type("?j/")
    assert not dialog.is_visible()
    assert page.locator("#reply-text").input_value() == "?j/"
    page.goto(live_server.url + urls["conversation-branches"])

    message = page.locator("article.msg").nth(0)
    message.focus()
    page.keyboard.press("?")
    assert dialog.is_visible()
    text = dialog.inner_text()
    for words in ("Next / previous message", "Regenerate", "Edit", "Compare", "Search",
                  "tree map", "Show this help", "Close"):  # fmt: skip
        assert words in text, words
    assert dialog.evaluate("d => d.contains(document.activeElement)")
    page.keyboard.press("j")  # no shortcut while the help is open
    screenshot(page, "kb-04-shortcuts", full_page=False)
    # It passes axe in both schemes and fits a phone.
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert not audit(page, include="#shortcuts"), scheme
    page.set_viewport_size({"width": 360, "height": 740})
    box = dialog.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
    screenshot(page, "kb-05-shortcuts-360-dark", full_page=False)
    page.emulate_media(color_scheme="light")
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert message.evaluate("m => m === document.activeElement")

    # Modifier keys leave the shortcuts alone; j moves.
    page.keyboard.press("Control+j")
    assert message.evaluate("m => m === document.activeElement")
    page.keyboard.press("j")
    assert page.locator("article.msg").nth(1).evaluate("m => m === document.activeElement")

    # c compares the alternatives of the current message.
    page.locator("article.msg").filter(has=page.locator(".switcher")).first.focus()
    page.keyboard.press("c")
    page.wait_for_url(re.compile(r"/compare/"))
    page.go_back()
    # g then t opens the tree map.
    page.locator("article.msg").first.focus()
    page.keyboard.press("g")
    page.keyboard.press("t")
    page.wait_for_url(re.compile(r"/tree/$"))
    # "/" goes to the thread list's search where a page has none, and focuses it.
    page.keyboard.press("/")
    page.wait_for_url(re.compile(r"#search$"))
    page.wait_for_function("document.activeElement.id === 'id_q'")
    page.keyboard.type("haiku")
    page.locator("body").focus()
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "id_q"


def test_a_run_the_reader_did_not_start_is_announced_but_takes_no_focus(
    browser: Any, live_server_asgi: Any, editor: Any
) -> None:
    thread, first = _weather()
    run = make_run(thread, ("text-delta", {"delta": "An agent"}), commit=False)
    page = open_page(browser, live_server_asgi, editor)
    page.goto(f"{live_server_asgi.url}/t/{thread.id}/")
    page.wait_for_selector(".run-live.is-open")
    page.evaluate(LISTEN)
    page.locator(f"#m-{first.id}").focus()
    ledger.append_events(run=run, events=events(("text-delta", {"delta": " answers."}), start=2))
    ledger.commit_run(run=run)
    page.wait_for_function("window.said.includes('Answer finished')", timeout=20_000)
    assert page.evaluate("document.activeElement.id") == f"m-{first.id}"
