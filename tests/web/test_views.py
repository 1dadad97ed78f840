"""View tests: every page with and without htmx, access rules, windows and query counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.factories import ask, conversation, last_message, make_run, make_thread, say
from tests.web.conftest import long_thread, message_at
from transcripts import ledger
from transcripts.models import Message, Thread
from transcripts.times import relative_time

pytestmark = pytest.mark.django_db


def _queries(client: Client, url: str, **headers: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200
    return len(captured)


def branched() -> tuple[Thread, Message, list[Message]]:
    """A thread whose answer was generated three times; returns (thread, prompt, answers)."""
    thread = make_thread("Colour quiz")
    prompt = last_message(ask(thread, "Name a colour"))
    answers = [
        last_message(say(thread, f"colour {name}", fork_from=prompt.id))
        for name in ("red", "green", "blue")
    ]
    ask(thread, "Why that one?")
    say(thread, "Because blue is calm")
    thread.refresh_from_db()
    return thread, prompt, answers


# --- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/t/{thread}/", "/t/{thread}/tree/", "/runs/{run}/"])
def test_an_outsider_is_sent_to_the_login_page(outsider: Client, path: str) -> None:
    thread = conversation(1)
    run = thread.runs.first()
    assert run is not None
    response = outsider.get(path.format(thread=thread.id, run=run.id))
    assert response.status_code == 302
    assert "login" in response["Location"]


@pytest.mark.parametrize("path", ["/", "/t/{thread}/", "/t/{thread}/tree/", "/runs/{run}/"])
def test_an_outsider_htmx_request_reloads_into_the_login_page(outsider: Client, path: str) -> None:
    thread = conversation(1)
    run = thread.runs.first()
    assert run is not None
    url = path.format(thread=thread.id, run=run.id)
    headers = {"HX-Request": "true", "HX-Current-URL": f"http://testserver/t/{thread.id}/"}
    response = outsider.get(url, headers=headers)
    # Not a redirect htmx would follow and swap into the fragment: a full-page navigation.
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next=/t/{thread.id}/"
    assert b"answer 0" not in response.content and thread.title.encode() not in response.content


@pytest.mark.parametrize("path", ["/t/{thread}/", "/t/{thread}/tree/", "/runs/{run}/"])
def test_a_hidden_thread_is_a_404_for_viewers_but_not_for_moderators(
    viewer_client: Client, moderator_client: Client, path: str
) -> None:
    thread = conversation(1)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    run = thread.runs.first()
    assert run is not None
    url = path.format(thread=thread.id, run=run.id)
    assert viewer_client.get(url).status_code == 404
    assert viewer_client.get(url, headers={"HX-Request": "true"}).status_code == 404
    assert moderator_client.get(url).status_code == 200


def test_hidden_threads_are_left_out_of_the_list_for_viewers(
    viewer_client: Client, moderator_client: Client
) -> None:
    make_thread("Visible one")
    hidden = make_thread("Secret one")
    Thread.objects.filter(pk=hidden.pk).update(hidden=True)
    assert b"Secret one" not in viewer_client.get("/").content
    assert b"Secret one" not in viewer_client.get("/?status=hidden").content
    assert b"Visible one" in viewer_client.get("/").content
    assert b"Secret one" in moderator_client.get("/").content


@pytest.mark.parametrize(
    "path", ["/t/NOTAULID/", "/t/01ARZ3NDEKTSV4RRFFQ69G5FAV/", "/runs/nope/", "/t/nope/tree/"]
)
def test_unknown_ids_are_a_404(viewer_client: Client, path: str) -> None:
    assert viewer_client.get(path).status_code == 404


def test_a_leaf_from_another_thread_is_a_404(viewer_client: Client) -> None:
    thread = conversation(1)
    other = conversation(1)
    foreign = message_at(other, 0)
    assert viewer_client.get(f"/t/{thread.id}/?leaf={foreign.id}").status_code == 404
    assert viewer_client.get(f"/t/{thread.id}/?leaf=garbage").status_code == 404


def test_the_login_page_renders(outsider: Client) -> None:
    response = outsider.get("/accounts/login/")
    assert response.status_code == 200
    assert b'name="password"' in response.content


# --- thread list -------------------------------------------------------------------------


def test_the_thread_list_shows_counts_branches_and_models(viewer_client: Client) -> None:
    thread, _, _ = branched()
    make_run(thread, ("text-delta", {"delta": "x"}), model="gpt-test")
    response = viewer_client.get("/")
    html = response.content.decode()
    assert "Colour quiz" in html
    assert 'data-label="Messages">7</td>' in html
    assert ">3</td>" in html.split('data-label="Branches"')[1][:200]
    assert '<span class="chip">gpt-test</span>' in html
    assert "<html" in html


def test_each_row_previews_the_first_question_of_the_active_branch(
    viewer_client: Client,
) -> None:
    thread = make_thread("Preview me")
    make_run(
        thread,
        ("message", {"role": "system", "parts": [{"type": "text", "text": "Be terse."}]}),
    )
    first = last_message(ask(thread, "What is   a fork point?\nAnd why?"))
    say(thread, "The message a run continues from.")
    ask(thread, "A later question")
    ask(thread, "Edited first question", fork_from=first.parent_id)  # now the active one
    make_thread("Nothing asked yet")
    html = viewer_client.get("/").content.decode()
    assert '<p class="thread-preview">Edited first question</p>' in html
    assert "What is a fork point?" not in html
    assert "Be terse." not in html
    assert "A later question" not in html
    assert html.count('class="thread-preview"') == 1  # the empty thread shows none
    # A search shows the hit instead.
    found = viewer_client.get("/?q=fork").content.decode()
    assert "<mark>fork</mark>" in found
    assert 'class="thread-preview"' not in found


def test_a_long_first_question_is_cut_to_one_line(viewer_client: Client) -> None:
    ask(make_thread("Long"), "word " * 100)
    html = viewer_client.get("/").content.decode()
    preview = html.split('<p class="thread-preview">')[1].split("</p>")[0]
    assert preview.endswith("…") and len(preview) <= 141


def test_a_thread_active_under_a_minute_ago_says_just_now(viewer_client: Client) -> None:
    make_thread("Fresh")
    html = viewer_client.get("/").content.decode()
    assert ">just now</time>" in html
    assert "0 minutes" not in html


@pytest.mark.parametrize(
    ("elapsed", "words"),
    [
        (timedelta(seconds=0), "just now"),
        (timedelta(seconds=59), "just now"),
        (timedelta(seconds=-30), "just now"),  # a clock slightly ahead
        (timedelta(seconds=60), "1 minute ago"),
        (timedelta(minutes=5, seconds=59), "5 minutes ago"),
        (timedelta(minutes=59), "59 minutes ago"),
        (timedelta(hours=1), "1 hour ago"),
        (timedelta(hours=23, minutes=59), "23 hours ago"),
        (timedelta(days=1), "1 day ago"),
        (timedelta(days=6, hours=23), "6 days ago"),
        (timedelta(days=45), "1 month ago"),
        (timedelta(days=400), "1 year ago"),
        (timedelta(days=3 * 365 + 1), "3 years ago"),
    ],
)
def test_relative_times_name_the_largest_whole_unit(elapsed: timedelta, words: str) -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert relative_time(now - elapsed, now) == words


def test_the_ago_filter_says_it_in_templates() -> None:
    rendered = Template("{% load relative_times %}{{ a|ago }}·{{ b|ago }}").render(
        Context({"a": datetime.now(UTC) - timedelta(hours=3), "b": None})
    )
    assert rendered == "3 hours ago·"


def test_an_htmx_filter_request_gets_only_the_results(viewer_client: Client, htmx: Any) -> None:
    make_thread("Alpha")
    response = viewer_client.get("/?q=", headers=htmx)
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="results"')
    assert "<html" not in html


def test_search_finds_text_on_inactive_branches_and_opens_that_branch(
    viewer_client: Client,
) -> None:
    thread, _, answers = branched()
    make_thread("Unrelated")
    html = viewer_client.get("/?q=green").content.decode()
    red_or_green = answers[1]
    assert not Message.objects.get(pk=red_or_green.pk).active
    assert f"/t/{thread.id}/?leaf={red_or_green.id}#m-{red_or_green.id}" in html
    assert "<mark>green</mark>" in html
    assert "Unrelated" not in html
    page = viewer_client.get(f"/t/{thread.id}/?leaf={red_or_green.id}").content.decode()
    assert "colour green" in page
    assert "alternative branch" in page


def test_the_filters_narrow_the_list(viewer_client: Client) -> None:
    branched()
    linear = conversation(1, title="Linear talk")
    failed_thread = make_thread("Has a failure")
    run, _ = ledger.begin_run(thread=failed_thread)
    ledger.fail_run(run=run, error="boom")
    flagged = make_thread("Flag me")
    make_run(
        flagged,
        ("message", {"role": "user", "parts": [], "metadata": {"flagged": True}}),
    )
    make_run(linear, ("text-delta", {"delta": "hi"}), model="claude-x")

    def titles(query: str) -> str:
        return viewer_client.get("/?" + query).content.decode()

    assert "Colour quiz" in titles("branches=on") and "Linear talk" not in titles("branches=on")
    assert "Has a failure" in titles("failed=on") and "Colour quiz" not in titles("failed=on")
    assert "Flag me" in titles("flagged=on") and "Linear talk" not in titles("flagged=on")
    assert "Linear talk" in titles("who=claude") and "Colour quiz" not in titles("who=claude")
    assert "Linear talk" not in titles("until=2000-01-01")
    assert "Linear talk" in titles("since=2000-01-01&sort=title")


def test_load_more_follows_a_cursor_without_repeating_threads(
    viewer_client: Client, htmx: Any
) -> None:
    for n in range(30):
        make_thread(f"Thread number {n:02d}")
    first = viewer_client.get("/?sort=title").content.decode()
    assert "Thread number 24" in first and "Thread number 25" not in first
    cursor = first.split("cursor=")[1].split('"')[0].replace("&amp;", "&")
    more = viewer_client.get(f"/?sort=title&cursor={cursor}", headers=htmx).content.decode()
    assert "<html" not in more and '<section id="results"' not in more
    assert "Thread number 25" in more and "Thread number 29" in more
    assert "Thread number 24" not in more
    assert "Load more" not in more


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("since=garbage", "From:"),
        ("until=2024-13-01", "To:"),
        ("q=" + "x" * 201, "Search:"),
        ("q=nul%00byte", "Search:"),
        ("sort=bogus", "Sort:"),
        ("status=bogus", "Status:"),
        ("who=" + "m" * 201, "Agent or model:"),
        ("cursor=garbage", "Page:"),
        ("sort=recent&cursor=WyJ0aXRsZSIsICIwMUFSWjNOREVLVFNWNFJSRkZRNjlHNUZBViJd", "Page:"),
    ],
)
def test_filters_that_cannot_be_applied_are_a_400_that_names_them(
    viewer_client: Client, htmx: Any, query: str, named: str
) -> None:
    make_thread("Should not be listed")
    response = viewer_client.get("/?" + query)
    html = response.content.decode()
    assert response.status_code == 400
    assert named in html and "cannot be applied" in html
    assert "Should not be listed" not in html and "<html" in html
    partial = viewer_client.get("/?" + query, headers=htmx)
    assert partial.status_code == 400
    text = partial.content.decode()
    assert text.lstrip().startswith('<section id="results"') and named in text


def test_every_sort_pages_through_every_thread_once(viewer_client: Client, htmx: Any) -> None:
    for n in range(27):
        make_thread(f"Sorted {n:02d}")
    for sort in ("recent", "oldest", "newest", "title"):
        html = viewer_client.get(f"/?sort={sort}").content.decode()
        seen = [line.split("Sorted ")[1][:2] for line in html.split("\n") if "thread-title" in line]
        cursor = html.split("cursor=")[1].split('"')[0].replace("&amp;", "&")
        more = viewer_client.get(f"/?sort={sort}&cursor={cursor}", headers=htmx).content.decode()
        seen += [
            line.split("Sorted ")[1][:2] for line in more.split("\n") if "thread-title" in line
        ]
        assert sorted(seen) == [f"{n:02d}" for n in range(27)], sort
        if sort in ("oldest", "title"):
            assert seen == sorted(seen), sort
        else:
            assert seen == sorted(seen, reverse=True), sort


def test_the_thread_list_runs_a_constant_number_of_queries(viewer_client: Client) -> None:
    long_thread(10, title="Small")
    few = _queries(viewer_client, "/?q=message")
    long_thread(1000, title="Big")
    for n in range(5):
        conversation(1, title=f"Extra {n}")
    assert _queries(viewer_client, "/?q=message") == few


# --- conversation ------------------------------------------------------------------------


def test_the_conversation_shows_the_active_path_with_a_switcher(viewer_client: Client) -> None:
    thread, _, answers = branched()
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert "colour blue" in html and "colour red" not in html
    assert '<span class="sib-count">3/3</span>' in html
    assert f'href="/t/{thread.id}/?leaf={answers[1].id}#m-{answers[1].id}"' in html
    assert f'hx-get="/t/{thread.id}/?leaf={answers[1].id}"' in html
    assert "alternative branch" not in html


def test_a_sibling_continues_down_its_own_latest_descendants(viewer_client: Client) -> None:
    thread = make_thread("Deep branches")
    prompt = last_message(ask(thread, "start"))
    old = last_message(say(thread, "old answer", fork_from=prompt.id))
    ask(thread, "follow-up on the old answer", fork_from=old.id)
    say(thread, "reply on the old branch")
    say(thread, "new answer", fork_from=prompt.id)
    html = viewer_client.get(f"/t/{thread.id}/?leaf={old.id}").content.decode()
    assert "old answer" in html and "reply on the old branch" in html
    assert "new answer" not in html
    assert "alternative branch" in html
    assert '<span class="sib-count">1/2</span>' in html


def test_an_htmx_branch_switch_gets_only_the_conversation(viewer_client: Client, htmx: Any) -> None:
    thread, _, answers = branched()
    html = viewer_client.get(f"/t/{thread.id}/?leaf={answers[0].id}", headers=htmx)
    text = html.content.decode()
    assert text.lstrip().startswith('<section id="conversation"')
    assert "colour red" in text and "<html" not in text


def test_a_long_thread_sends_a_window_and_loads_earlier_and_later_messages(
    viewer_client: Client, htmx: Any
) -> None:
    thread = long_thread(130)
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert html.count('<article id="m-') == 50
    assert "message number 129" in html and "message number 79" not in html
    first = message_at(thread, 80)
    assert f"dir=before&amp;from={first.id}" in html
    earlier = viewer_client.get(f"/t/{thread.id}/?dir=before&from={first.id}", headers=htmx)
    text = earlier.content.decode()
    assert text.count('<article id="m-') == 50
    assert "message number 30" in text and "message number 80" not in text
    assert "Load earlier" in text
    around = viewer_client.get(f"/t/{thread.id}/?leaf={message_at(thread, 20).id}")
    text = around.content.decode()
    assert "message number 5<" in text and "message number 4<" not in text
    assert "message number 55<" in text and "message number 56<" not in text
    last = message_at(thread, 55)
    later = viewer_client.get(f"/t/{thread.id}/?dir=after&from={last.id}", headers=htmx)
    text = later.content.decode()
    assert "message number 56<" in text and "message number 105<" in text
    assert "message number 106<" not in text and "Load later" in text


def test_later_messages_of_an_inactive_branch_follow_that_branch(
    viewer_client: Client, htmx: Any
) -> None:
    thread = long_thread(4)
    fork = message_at(thread, 1)
    side = long_thread_from(thread, fork, 70)
    first = side[0]
    html = viewer_client.get(f"/t/{thread.id}/?leaf={first.id}").content.decode()
    assert "side 0<" in html and "side 35<" in html and "side 36<" not in html
    # The pager keeps the branch being read, so a Restore on the next page restores it.
    assert f"dir=after&amp;from={side[35].id}&amp;leaf={first.id}" in html
    last = side[35]
    later = viewer_client.get(f"/t/{thread.id}/?dir=after&from={last.id}", headers=htmx)
    text = later.content.decode()
    assert "side 36<" in text and "side 69<" in text and "Load later" not in text
    earlier = viewer_client.get(f"/t/{thread.id}/?dir=before&from={first.id}", headers=htmx)
    assert "message number 1<" in earlier.content.decode()


def long_thread_from(thread: Thread, fork: Message, count: int) -> list[Message]:
    """A committed run of count messages forked from fork; then the thread moves on."""
    items = [
        ("message", {"role": "assistant", "parts": [{"type": "text", "text": f"side {i}"}]})
        for i in range(count)
    ]
    run = make_run(thread, *items, fork_from=fork.id)
    say(thread, "newer answer", fork_from=fork.id)
    return list(Message.objects.filter(run=run).order_by("position"))


@pytest.mark.parametrize("variant", ["", "?leaf={mid}", "?leaf={side}", "?dir=before&from={mid}"])
def test_the_conversation_runs_the_same_number_of_queries_for_10_and_1000_messages(
    viewer_client: Client, variant: str
) -> None:
    counts = []
    for size in (10, 1000):
        thread = long_thread(size)
        mid = message_at(thread, size // 2)
        side = last_message(say(thread, "a side answer", fork_from=mid.id))
        say(thread, "the active answer", fork_from=mid.id)
        url = f"/t/{thread.id}/" + variant.format(mid=mid.id, side=side.id)
        counts.append(_queries(viewer_client, url))
        counts.append(_queries(viewer_client, url, **{"HX-Request": "true"}))
    assert counts[0] == counts[2] and counts[1] == counts[3], counts


def test_parts_render_by_type(viewer_client: Client) -> None:
    thread = make_thread("Parts")
    parts = [
        {"type": "reasoning", "text": "thinking hard"},
        {"type": "text", "text": "Here is code:\n\n```python\nprint('hi')\n```"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": 1}},
        {"type": "file", "mimeType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "file", "mimeType": "application/pdf", "url": "https://example.com/a.pdf",
         "name": "a.pdf"},
    ]  # fmt: skip
    make_run(
        thread,
        ("message", {"role": "assistant", "parts": parts, "metadata": {
            "model": "m-1", "usage": {"inputTokens": 11, "outputTokens": 22},
            "finishReason": "tool-calls", "errors": [{"message": "rate limited"}]}}),
        ("tool-result", {"toolCallId": "c1", "toolName": "lookup", "output": "nope",
                         "isError": True}),
        ("message", {"role": "system", "parts": [{"type": "text", "text": "secret"}],
                     "metadata": {"hidden": True}}),
    )  # fmt: skip
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert '<details class="reasoning"><summary>Reasoning</summary>' in html
    assert '<pre class="hl"><code><span class="nb">print</span>' in html
    assert '<details class="tool tool-card is-error" open>' in html
    assert '<div class="tool-label">Error</div><pre class="plain">nope</pre>' in html
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in html
    assert 'href="https://example.com/a.pdf"' in html
    assert "11 → 22 tok" in html and "tool-calls" in html and "m-1" in html
    assert "rate limited" in html
    assert (
        '<details class="hidden-group"><summary>1 hidden message <span class="muted">system' in html
    )


def test_single_line_breaks_in_model_output_are_kept(viewer_client: Client) -> None:
    thread = make_thread("Poem")
    make_run(thread, ("message", {"role": "assistant", "parts": [
        {"type": "text", "text": "One elephant stands\nholding every row"}]}))  # fmt: skip
    html = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert "One elephant stands<br>" in html


# --- tree map ----------------------------------------------------------------------------


def test_the_tree_map_collapses_linear_runs_and_links_to_branches(
    viewer_client: Client, htmx: Any
) -> None:
    thread, prompt, answers = branched()
    run, _ = ledger.begin_run(thread=thread, fork_from=prompt.id)
    ledger.fail_run(run=run, error="boom")
    html = viewer_client.get(f"/t/{thread.id}/tree/").content.decode()
    assert "6 messages · 3 branches" in html
    assert f"?leaf={answers[0].id}#m-{answers[0].id}" in html
    assert f"/runs/{run.id}/" in html
    assert "3 msgs" in html
    partial = viewer_client.get(f"/t/{thread.id}/tree/", headers=htmx).content.decode()
    assert partial.lstrip().startswith('<section id="tree"') and "<html" not in partial


def test_the_tree_map_runs_a_constant_number_of_queries(viewer_client: Client) -> None:
    small = long_thread(10)
    big = long_thread(1000)
    for thread in (small, big):
        for depth in (5, 3):
            say(thread, "alt", fork_from=message_at(thread, depth).id)
    counts = [_queries(viewer_client, f"/t/{t.id}/tree/") for t in (small, big)]
    assert counts[0] == counts[1]


# --- run page ------------------------------------------------------------------------


def test_the_run_timeline_shows_status_timings_usage_and_events(
    viewer_client: Client, htmx: Any
) -> None:
    thread = make_thread("Timed")
    ask(thread, "hello")
    run = say(thread, " ".join(f"w{i}" for i in range(150)))
    html = viewer_client.get(f"/runs/{run.id}/").content.decode()
    assert "committed" in html and "Time to first token" in html
    assert html.count('<details class="event') == 100
    assert "?after=100" in html and '<details class="raw-log">' in html
    assert "sse-connect" not in html
    more = viewer_client.get(f"/runs/{run.id}/?after=100", headers=htmx).content.decode()
    assert more.count('<details class="event') == 50 and "<html" not in more
    assert "Load more events" not in more
    live = viewer_client.get(f"/runs/{run.id}/", headers=htmx).content.decode()
    assert live.lstrip().startswith('<section id="live"')
    # The timeline is not styled as a new branch streaming inside a conversation.
    assert 'class="run-live' not in html


@pytest.mark.parametrize("after", ["abc", "-1", "1e5", str(2**64)])
def test_a_bad_event_page_position_is_a_400(viewer_client: Client, after: str) -> None:
    run = say(make_thread("Paged"), "a b c")
    response = viewer_client.get(f"/runs/{run.id}/?after={after}")
    assert response.status_code == 400
    assert b"after" in response.content


def test_an_open_run_is_wired_to_the_event_stream(viewer_client: Client) -> None:
    thread = make_thread("Streaming")
    run = make_run(thread, ("text-delta", {"delta": "partial"}), commit=False)
    html = viewer_client.get(f"/runs/{run.id}/").content.decode()
    assert f'sse-connect="/api/v1/runs/{run.id}/stream' in html
    assert 'hx-ext="sse"' in html and "hx-sse-2" in html
    assert "sse:text-delta" in html and 'sse-close="status"' in html
    page = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert f"/runs/{run.id}/" in page and "live run" in page


def test_a_failed_run_shows_its_error(viewer_client: Client) -> None:
    thread = make_thread("Failing")
    run, _ = ledger.begin_run(thread=thread)
    ledger.fail_run(run=run, error={"message": "model overloaded", "code": "overloaded"})
    html = viewer_client.get(f"/runs/{run.id}/").content.decode()
    assert "model overloaded" in html and "overloaded</code>" in html


def test_the_run_timeline_runs_a_constant_number_of_queries(viewer_client: Client) -> None:
    thread = make_thread("Runs")
    short = say(thread, "a b c")
    long = say(thread, " ".join(["word"] * 1500))
    assert _queries(viewer_client, f"/runs/{short.id}/") == _queries(
        viewer_client, f"/runs/{long.id}/"
    )
