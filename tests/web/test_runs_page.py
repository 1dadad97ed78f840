"""The run page as a reader meets it (issue 26): a heading that names the run by its place in
the thread, the fork point in words, content rendered like the conversation with the raw text
behind a toggle, "no timing recorded" for runs whose events carry none, and no time below 0
there or in Compare."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client

from tests.factories import ask, last_message, make_thread, say
from tests.web.test_trace import run_of, timed
from transcripts import interchange, ledger
from transcripts.ledger.default_project import default_project
from transcripts.models import Run, Thread
from transcripts.web.presenters.runs import fork_label, plain_excerpt

pytestmark = pytest.mark.django_db

CONTINUES = {"continues": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}


def _page(client: Client, run: Run) -> str:
    response = client.get(f"/runs/{run.id}/")
    assert response.status_code == 200
    return str(response.content.decode())


def _imported() -> Thread:
    """A thread imported from a format without timestamps (OpenAI messages)."""
    document = {
        "messages": [
            {"role": "user", "content": "Should I **bike** to work?"},
            {"role": "assistant", "content": "**Yes**: take a jacket.\n\n- rain until 8\n- dry"},
        ]
    }
    (thread_id,) = interchange.import_data(document, "openai", project=default_project()).thread_ids
    return Thread.objects.get(pk=thread_id)


# --- heading and fork point -----------------------------------------------------------------


def test_the_heading_is_the_runs_place_in_the_thread_not_its_ulid(viewer_client: Client) -> None:
    thread = make_thread("Commute")
    ask(thread, "Should I bike?")
    run = say(thread, "Yes", model="demo-1")
    html = _page(viewer_client, run)
    assert '<h1 class="run-heading">Run 2 of 2 · demo-1</h1>' in html
    assert "<title>Run 2 of 2 · demo-1 · Commute · Transcripts</title>" in html
    assert f'<a href="/t/{thread.id}/">Commute</a>' in html  # the thread, linked above it
    # The ULID stays, small and copyable, but is no heading.
    assert f'<code class="run-id">{run.id}</code>' in html and f'data-copy="{run.id}"' in html
    assert not re.search(r"<h1[^>]*>[^<]*<code", html)


def test_the_fork_point_is_named_and_linked(viewer_client: Client) -> None:
    thread = make_thread("Commute")
    ask(thread, "Hi")
    say(thread, "Hello")
    prompt = last_message(ask(thread, "Should I **bike** to work in [Amsterdam](https://x.nl)?"))
    run = say(thread, "Yes", fork_from=prompt.id)
    html = _page(viewer_client, run)
    link = f'<a href="/t/{thread.id}/?leaf={prompt.id}#m-{prompt.id}">'
    assert link + "after message 3 · user: Should I bike to work in Amsterdam?</a>" in html
    first = Run.objects.filter(thread=thread).order_by("created_at").first()
    assert first is not None
    assert '<dd class="fork-point">starts the thread</dd>' in _page(viewer_client, first)


def test_a_superseded_run_links_the_run_that_replaced_it_in_words(viewer_client: Client) -> None:
    thread = make_thread("Replaced")
    prompt = last_message(ask(thread, "Go"))
    old = say(thread, "First", fork_from=prompt.id)
    new = say(thread, "Second", fork_from=prompt.id)
    Run.objects.filter(pk=old.pk).update(superseded_by=new)
    html = _page(viewer_client, old)
    assert f'<a href="/runs/{new.id}/">the run that replaced it</a>' in html
    assert f"<code>{new.id}</code>" not in html


def test_a_fork_label_clips_and_strips_markdown() -> None:
    assert plain_excerpt("## A `get_forecast` **call** > [docs](http://x)") == (
        "A get_forecast call docs"
    )
    assert fork_label(None) == "starts the thread"


# --- content -----------------------------------------------------------------------------


def test_content_is_rendered_like_the_conversation_with_the_raw_text_behind_a_toggle(
    viewer_client: Client,
) -> None:
    run = Run.objects.get(thread=_imported())
    html = _page(viewer_client, run)
    content = html[
        html.index('<div class="run-content">') : html.index('<details class="raw-content">')
    ]
    assert "<strong>Yes</strong>" in content and "<li>rain until 8</li>" in content
    assert content.count('<article id="m-') == 2 and "**Yes**" not in content.replace(
        'data-copy="**Yes**', ""
    )
    raw = html[html.index('<details class="raw-content">') : html.index('<details class="raw-log"')]
    assert "**Yes**: take a jacket." in raw  # as recorded, behind a toggle that needs no JS


# --- no timing ------------------------------------------------------------------------------


def test_an_imported_run_without_timestamps_says_no_timing_and_draws_no_spans(
    viewer_client: Client,
) -> None:
    run = Run.objects.get(thread=_imported())
    html = _page(viewer_client, run)
    assert html.count("no timing recorded") == 2  # time to first token, duration
    assert "No timing recorded:" in html
    assert 'class="trace-bar"' not in html and 'class="wf-ticks"' not in html
    assert "starts at" not in html and not re.search(r"\+\d+\.\d+ ?s", html)
    assert '<td class="wf-num wf-duration" data-label="Duration">—</td>' in html
    assert " ms<" not in html


def test_a_later_page_of_an_untimed_log_shows_no_offsets(viewer_client: Client) -> None:
    run = say(make_thread("Batch"), " ".join(f"w{i}" for i in range(120)))
    headers = {"HX-Request": "true"}
    more = viewer_client.get(f"/runs/{run.id}/?after=100", headers=headers).content.decode()
    assert more.count('<span class="offset"></span>') == 20


def test_a_timed_run_keeps_its_bars_and_durations(viewer_client: Client) -> None:
    items = timed(
        (0.0, "step-started", {}), (0.4, "text-delta", {"delta": "Hi"}), (1.0, "step-finished", {})
    )
    html = _page(viewer_client, run_of(make_thread("Timed"), items))
    assert "no timing recorded" not in html and 'class="trace-bar"' in html
    assert '<dd class="run-ttft">0.400 s</dd>' in html


# --- never below 0 ---------------------------------------------------------------------------


def _continued(thread: Thread, fork_id: str, *, note: dict[str, str]) -> Run:
    """An answer whose first event came 118 ms before its run started (a continued answer's
    copied text is queued before a worker takes the run)."""
    run, _ = ledger.begin_run(thread=thread, fork_from=fork_id, generator="external")
    items = timed((0.0, "text-delta", {"delta": "Yes, "}), (0.9, "text-delta", {"delta": "go."}))
    ledger.append_events(run=run, events=items)
    run = ledger.commit_run(run=run)
    first = run.first_event_at
    assert first is not None
    Run.objects.filter(pk=run.pk).update(
        started_at=first + timedelta(milliseconds=118),
        finished_at=first + timedelta(seconds=1),
        metadata=note,
    )
    return Run.objects.select_related("thread").get(pk=run.pk)


def _shows_no_negative_time(html: str) -> None:
    """No time below 0 (Compare's deltas between columns are differences, signed)."""
    html = re.sub(r'<span class="delta">[^<]*</span>', "", html)
    assert not re.search(r"[-\N{MINUS SIGN}]\s?\d+(\.\d+)?\s?(ms|s)\b", html)
    assert "+-" not in html and "+\N{MINUS SIGN}" not in html


def test_a_continued_answer_shows_no_negative_time_and_says_why(viewer_client: Client) -> None:
    thread = make_thread("Continued")
    prompt = last_message(ask(thread, "Go on"))
    say(thread, "Sure", fork_from=prompt.id)
    run = _continued(thread, prompt.id, note=CONTINUES)
    page = _page(viewer_client, run)
    _shows_no_negative_time(page)
    assert "continued: the stopped answer&#x27;s text came first" in page
    compare = viewer_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/")
    metrics = {m.label: m for c in compare.context["columns"] for m in c.metrics if c.run == run}
    assert (metrics["First token"].value, metrics["First token"].raw) == ("0 ms", 0.0)
    assert metrics["First token"].note.startswith("continued")
    html = compare.content.decode()
    _shows_no_negative_time(html)
    assert "(continued: the stopped answer&#x27;s text came first)" in html


def test_a_first_token_before_the_start_elsewhere_is_clock_skew(viewer_client: Client) -> None:
    thread = make_thread("Skewed")
    prompt = last_message(ask(thread, "Go"))
    say(thread, "Sure", fork_from=prompt.id)
    run = _continued(thread, prompt.id, note={})
    html = viewer_client.get(f"/t/{thread.id}/fork/{prompt.id}/compare/").content.decode()
    _shows_no_negative_time(html)
    assert "(≈0, clock skew)" in html
    assert "clock skew" not in _page(viewer_client, run)  # the trace starts at its first event


def test_compare_says_no_timing_for_an_imported_run(viewer_client: Client) -> None:
    thread = _imported()
    run = Run.objects.get(thread=thread)
    compare = viewer_client.get(f"/t/{thread.id}/fork/root/compare/")
    (column,) = [c for c in compare.context["columns"] if c.run == run]
    metrics = {m.label: m.value for m in column.metrics}
    assert metrics["First token"] == metrics["Duration"] == "no timing recorded"
