"""Compare view: branches at a fork point side by side, diffs, metrics, actions, ratings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import ask, last_message, make_run, make_thread, say, user_message
from transcripts import ledger
from transcripts.errors import Conflict, PermissionDenied
from transcripts.ledger import ratings
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import AuditRecord, Message, Run, RunRating, RunStatus, Thread

pytestmark = pytest.mark.django_db


def _compare_url(thread: Thread, fork: Message | None) -> str:
    return f"/t/{thread.id}/fork/{fork.id if fork else 'root'}/compare/"


def _columns(client: Client, url: str) -> list[Any]:
    response = client.get(url)
    assert response.status_code == 200
    return list(response.context["columns"])


def _failed(thread: Thread, fork: Message, text: str) -> Run:
    run = make_run(thread, ("text-delta", {"delta": text}), fork_from=fork.id, commit=False)
    return ledger.fail_run(run=run, error="the model went away")


def _cancelled(thread: Thread, fork: Message, text: str) -> Run:
    run = make_run(thread, ("text-delta", {"delta": text}), fork_from=fork.id, commit=False)
    return ledger.cancel_run(run=run)


def regenerated(count: int = 3) -> tuple[Thread, Message, list[Run]]:
    """A prompt answered count times (the last answer active); returns thread, prompt, runs."""
    thread = make_thread("Colour quiz")
    prompt = last_message(ask(thread, "Name a colour"))
    runs = [
        say(thread, f"My favourite colour is number {n} today", fork_from=prompt.id)
        for n in range(count)
    ]
    thread.refresh_from_db()
    return thread, prompt, runs


# --- which runs, in which order ------------------------------------------------------------


def test_the_active_branch_comes_first_then_superseded_newest_first_then_failed_then_cancelled(
    viewer_client: Client,
) -> None:
    thread, prompt, runs = regenerated(3)
    failed = _failed(thread, prompt, "half an ans")
    # A cancelled run newer than the failed one still comes after it.
    cancelled = _cancelled(thread, prompt, "never mind")
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    assert [c.run.id for c in columns] == [
        runs[2].id,
        runs[1].id,
        runs[0].id,
        failed.id,
        cancelled.id,
    ]
    # Branch state, not run status: the superseded runs are alternatives.
    assert [c.kind for c in columns] == [
        "active",
        "alternative",
        "alternative",
        "failed",
        "cancelled",
    ]
    assert [c.label for c in columns][3:] == ["failed", "stopped"]
    assert [c.restorable for c in columns] == [False, True, True, False, False]
    # Failed runs have no rows: their column is the projection of their events.
    assert columns[3].cards[0].text == "half an ans"
    assert not columns[3].materialized and columns[0].materialized


def test_a_restored_branch_leads_again(viewer_client: Client) -> None:
    thread, prompt, runs = regenerated(3)
    ledger.restore_run(run=runs[0])
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    assert [c.run.id for c in columns] == [runs[0].id, runs[2].id, runs[1].id]


def test_off_the_active_path_the_committed_run_at_the_fork_point_leads(
    viewer_client: Client,
) -> None:
    thread, prompt, runs = regenerated(3)
    ask(thread, "Name a colour, please", fork_from=None)  # the prompt leaves the active path
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    assert [c.run.id for c in columns] == [runs[2].id, runs[1].id, runs[0].id]
    # Off the active path every branch is an alternative, the leading one included.
    assert [c.kind for c in columns] == ["alternative", "alternative", "alternative"]


def test_a_run_holding_the_prompt_and_its_answer_shows_only_its_answer(
    viewer_client: Client,
) -> None:
    thread = make_thread("Prompt and answer in one run")
    first = make_run(
        thread, user_message("Tell me a joke"), ("text-delta", {"delta": "Knock knock"})
    )
    prompt = first.messages.get(position=0)
    again = say(thread, "Why did the chicken cross the road", fork_from=prompt.id)
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    assert [c.run.id for c in columns] == [again.id, first.id]
    # The old answer's run also wrote the prompt, so it is still "committed" (nothing at its
    # own fork point replaced it), yet its answer is an alternative here, and restorable.
    assert [c.kind for c in columns] == ["active", "alternative"]
    assert [c.run.status for c in columns] == [RunStatus.COMMITTED, RunStatus.COMMITTED]
    assert [c.restorable for c in columns] == [False, True]
    assert [card.text for card in columns[1].cards] == ["Knock knock"]
    assert columns[1].open_url.endswith(f"#m-{first.messages.get(position=1).id}")


def test_edited_first_prompts_compare_at_the_root(viewer_client: Client) -> None:
    thread = make_thread("Edited")
    original = ask(thread, "Write a haiku")
    edited = ask(thread, "Write a haiku about Postgres", fork_from=None)
    columns = _columns(viewer_client, _compare_url(thread, None))
    assert [c.run.id for c in columns] == [edited.id, original.id]
    content = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert f'href="/t/{thread.id}/fork/root/compare/"' in content


def test_the_switcher_links_to_the_compare_view_of_the_fork_point(viewer_client: Client) -> None:
    thread, prompt, _ = regenerated(2)
    content = viewer_client.get(f"/t/{thread.id}/").content.decode()
    assert f'href="{_compare_url(thread, prompt)}"' in content


def test_more_than_ten_runs_are_listed_below_the_ten_columns(viewer_client: Client) -> None:
    thread, prompt, _ = regenerated(12)
    response = viewer_client.get(_compare_url(thread, prompt))
    assert len(response.context["columns"]) == 10
    assert len(response.context["more"]) == 2
    assert "2 more runs at this point" in response.content.decode()


def test_beyond_forty_more_runs_the_rest_are_counted_not_linked(viewer_client: Client) -> None:
    thread, prompt, _ = regenerated(55)
    response = viewer_client.get(_compare_url(thread, prompt))
    assert len(response.context["more"]) == 40
    html = response.content.decode()
    assert "45 more runs at this point" in html and " and 5 more." in html
    assert html.count('title="Compare with column 1"') == 40


# --- differences ---------------------------------------------------------------------------


def test_texts_are_diffed_word_by_word_against_the_active_branch(viewer_client: Client) -> None:
    thread = make_thread("Diff")
    prompt = last_message(ask(thread, "Colour?"))
    say(thread, "The sky is red and calm", fork_from=prompt.id)
    say(thread, "The sky is blue and calm", fork_from=prompt.id)
    url = _compare_url(thread, prompt)
    content = viewer_client.get(url).content.decode()
    assert '<del class="diff-del">blue</del><ins class="diff-add">red</ins>' in content
    assert "83% same" in content
    rendered = viewer_client.get(url + "?view=rendered").content.decode()
    assert '<del class="diff-del">' not in rendered
    assert "<p>The sky is red and calm</p>" in rendered


def test_the_diff_escapes_what_it_marks(viewer_client: Client) -> None:
    thread = make_thread("Escaping")
    prompt = last_message(ask(thread, "?"))
    say(thread, "plain words here", fork_from=prompt.id)
    say(thread, "plain <script>alert(1)</script> here", fork_from=prompt.id)
    content = viewer_client.get(_compare_url(thread, prompt)).content.decode()
    assert "<script>alert(1)" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content


def _tool_run(thread: Thread, fork: Message, city: str, forecast: str) -> Run:
    return make_run(
        thread,
        ("tool-call", {"toolCallId": f"c-{city}", "toolName": "forecast", "input": {"city": city}}),
        (
            "tool-result",
            {"toolCallId": f"c-{city}", "toolName": "forecast", "output": forecast},
        ),
        ("text-delta", {"delta": f"It is {forecast}"}),
        fork_from=fork.id,
    )


def test_tool_calls_are_compared_by_name_arguments_and_output(viewer_client: Client) -> None:
    thread = make_thread("Tools")
    prompt = last_message(ask(thread, "Weather?"))
    _tool_run(thread, prompt, "Paris", "sunny")  # column 3: other arguments and output
    _tool_run(thread, prompt, "Rome", "sunny")  # column 2: other output
    _tool_run(thread, prompt, "Rome", "rainy")  # column 1, active
    say(thread, "I do not know", fork_from=prompt.id)  # no tool at all
    ledger.restore_run(run=Run.objects.filter(thread=thread).order_by("-id")[1])
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    statuses = [
        [item.tool_status for card in column.cards for item in card.parts if item.tool_status]
        for column in columns
    ]
    # Active: Rome/rainy; then the plain answer (superseded last), Rome/sunny, Paris/sunny.
    # Paris/sunny differs from Rome/rainy in both its arguments and its output.
    assert statuses == [[], [], ["output"], ["both"]]
    assert "forecast call" in columns[1].missing
    content = viewer_client.get(_compare_url(thread, prompt)).content.decode()
    assert "output differs" in content and "arguments and output differ" in content


def test_the_metrics_row_shows_model_tokens_timings_and_events(viewer_client: Client) -> None:
    thread = make_thread("Metrics")
    prompt = last_message(ask(thread, "Go"))
    slow = make_run(
        thread,
        ("text-delta", {"delta": "slow answer"}),
        ("step-finished", {"finishReason": "length", "usage": {"inputTokens": 10}}),
        fork_from=prompt.id,
        generator="openai",
        model="gpt-slow",
        parameters={"temperature": 0.2},
    )
    fast = make_run(
        thread,
        ("text-delta", {"delta": "fast"}),
        ("text-delta", {"delta": " answer"}),
        (
            "step-finished",
            {"finishReason": "stop", "usage": {"inputTokens": 10, "outputTokens": 4}},
        ),
        fork_from=prompt.id,
        generator="demo",
        model="demo-1",
    )
    start = timezone.now()
    for run, ttft, duration in ((fast, 0.25, 1.5), (slow, 1.25, 4.0)):
        Run.objects.filter(pk=run.pk).update(
            started_at=start,
            first_event_at=start + timedelta(seconds=ttft),
            finished_at=start + timedelta(seconds=duration),
        )
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    assert [c.run.id for c in columns] == [fast.id, slow.id]
    values = [{m.label: m.value for m in c.metrics} for c in columns]
    assert values[0] == {
        "Generator": "demo",
        "Model": "demo-1",
        "Parameters": "\N{EN DASH}",
        "Input tokens": "10",
        "Output tokens": "4",
        "Finish reason": "stop",
        "First token": "250 ms",
        "Duration": "1.50 s",
        "Events": "3",
    }
    assert values[1]["Model"] == "gpt-slow"
    assert values[1]["Parameters"] == "temperature=0.2"
    assert values[1]["Output tokens"] == "\N{EN DASH}"
    assert values[1]["Finish reason"] == "length"
    assert values[1]["Duration"] == "4.00 s"
    assert values[1]["Events"] == "2"
    differs = {m.label: (m.differs, m.delta) for m in columns[1].metrics}
    assert differs["Input tokens"] == (False, "")
    assert differs["Duration"] == (True, "+2.50 s")
    assert differs["Events"] == (True, "-1")


def test_a_timing_that_differs_by_less_than_a_millisecond_says_so(viewer_client: Client) -> None:
    thread = make_thread("Close timings")
    prompt = last_message(ask(thread, "Go"))
    first = say(thread, "one answer", fork_from=prompt.id)
    second = say(thread, "another answer", fork_from=prompt.id)
    start = timezone.now()
    for run, duration in ((second, 0.0094), (first, 0.0098)):
        Run.objects.filter(pk=run.pk).update(
            started_at=start, finished_at=start + timedelta(seconds=duration)
        )
    columns = _columns(viewer_client, _compare_url(thread, prompt))
    duration = {m.label: m for m in columns[1].metrics}["Duration"]
    assert (duration.value, duration.differs, duration.delta) == ("10 ms", True, "+<1 ms")


# --- two runs --------------------------------------------------------------------------------


def test_two_runs_compare_by_id_from_where_they_part(viewer_client: Client) -> None:
    thread = make_thread("Pair")
    first = make_run(thread, user_message("Hi"), ("text-delta", {"delta": "Hello there"}))
    prompt = first.messages.get(position=0)
    second = say(thread, "Hello you", fork_from=prompt.id)
    response = viewer_client.get(f"/compare/?a={first.id}&b={second.id}")
    assert response.status_code == 200
    columns = response.context["columns"]
    assert [card.text.strip() for column in columns for card in column.cards] == [
        "Hello there",
        "Hello you",
    ]
    assert '<del class="diff-del">there</del><ins class="diff-add">you</ins>' in (
        response.content.decode()
    )


@pytest.mark.parametrize(
    "query", ["", "?a=nope&b=nope", "?a={a}", "?a={a}&b=01ARZ3NDEKTSV4RRFFQ69G5FAV"]
)
def test_a_pair_with_a_bad_id_is_a_404(viewer_client: Client, query: str) -> None:
    _, _, runs = regenerated(1)
    assert viewer_client.get("/compare/" + query.format(a=runs[0].id)).status_code == 404


# --- access --------------------------------------------------------------------------------


def test_an_outsider_is_sent_to_the_login_page(outsider: Client) -> None:
    thread, prompt, runs = regenerated(2)
    for url in (_compare_url(thread, prompt), f"/compare/?a={runs[0].id}&b={runs[1].id}"):
        response = outsider.get(url)
        assert response.status_code == 302 and "login" in response["Location"]
    for action in ("restore", "rate"):
        response = outsider.post(f"/runs/{runs[0].id}/{action}/")
        assert response.status_code == 302
    assert Run.objects.get(pk=runs[0].pk).status == RunStatus.SUPERSEDED
    assert not RunRating.objects.exists()


def test_a_hidden_thread_is_a_404_for_viewers_and_its_reading_is_audited_for_moderators(
    viewer_client: Client, moderator_client: Client, htmx: Any
) -> None:
    thread, prompt, runs = regenerated(2)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    urls = [_compare_url(thread, prompt), f"/compare/?a={runs[0].id}&b={runs[1].id}"]
    for url in urls:
        assert viewer_client.get(url).status_code == 404
    assert viewer_client.post(f"/runs/{runs[0].id}/restore/").status_code == 404
    assert viewer_client.post(f"/runs/{runs[0].id}/rate/", {"preferred": "on"}).status_code == 404
    for url in urls:
        assert moderator_client.get(url).status_code == 200
    moderator_client.get(urls[0], headers=htmx)
    assert AuditRecord.objects.filter(action="view_hidden", target_id=thread.id).count() == 2


def test_a_fork_point_from_another_thread_is_a_404(viewer_client: Client) -> None:
    thread, _, _ = regenerated(2)
    _, foreign, _ = regenerated(2)
    assert viewer_client.get(_compare_url(thread, foreign)).status_code == 404
    assert viewer_client.get(f"/t/{thread.id}/fork/garbage/compare/").status_code == 404


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


def test_the_compare_view_runs_the_same_number_of_queries_for_2_and_10_runs(
    editor_client: Client, editor: Any
) -> None:
    counts = []
    for count in (2, 10):
        thread, prompt, runs = regenerated(count - 1)
        _failed(thread, prompt, "oops")
        ratings.rate_run(user=editor, run=runs[0], preferred=True, note="best")
        url = _compare_url(thread, prompt)
        assert len(_columns(editor_client, url)) == count
        counts.append(_queries(editor_client, url))
        counts.append(_queries(editor_client, url + "?view=rendered"))
    assert counts[0] == counts[2] and counts[1] == counts[3]


# --- actions -------------------------------------------------------------------------------


def test_restoring_a_superseded_run_makes_it_active_and_returns_to_the_compare_view(
    editor_client: Client, htmx: Any
) -> None:
    thread, prompt, runs = regenerated(3)
    url = _compare_url(thread, prompt)
    assert f'action="/runs/{runs[0].id}/restore/"' in editor_client.get(url).content.decode()
    response = editor_client.post(f"/runs/{runs[0].id}/restore/", {"next": url})
    assert response.status_code == 303 and response["Location"] == url
    assert Run.objects.get(pk=runs[0].pk).status == RunStatus.COMMITTED
    assert Run.objects.get(pk=runs[2].pk).status == RunStatus.SUPERSEDED
    thread.refresh_from_db()
    assert thread.head_id == last_message(runs[0]).id
    page = editor_client.get(url)
    assert "Restored" in page.content.decode()
    assert page.context["columns"][0].run.id == runs[0].id
    # An htmx request gets only the compare section.
    partial = editor_client.get(url, headers=htmx).content.decode()
    assert partial.lstrip().startswith('<section id="compare"')


def test_restoring_refuses_runs_that_are_not_superseded_and_locked_threads(
    editor_client: Client,
) -> None:
    thread, prompt, runs = regenerated(2)
    failed = _failed(thread, prompt, "x")
    response = editor_client.post(f"/runs/{failed.id}/restore/")
    assert response.status_code == 409
    assert "only a superseded run can be restored" in response.content.decode()
    assert Run.objects.get(pk=failed.pk).status == RunStatus.FAILED
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    url = _compare_url(thread, prompt)
    response = editor_client.post(f"/runs/{runs[0].id}/restore/", {"next": url}, follow=True)
    assert response.status_code == 409
    assert "This thread is locked" in response.content.decode()
    assert Run.objects.get(pk=runs[0].pk).status == RunStatus.SUPERSEDED
    content = editor_client.get(_compare_url(thread, prompt)).content.decode()
    assert f'action="/runs/{runs[0].id}/restore/"' not in content


def test_an_unsafe_next_address_is_ignored(editor_client: Client) -> None:
    thread, prompt, runs = regenerated(2)
    response = editor_client.post(f"/runs/{runs[0].id}/restore/", {"next": "https://evil.example/"})
    assert response["Location"] == _compare_url(thread, prompt)


def test_marking_a_run_preferred_stores_the_note_and_shows_it(
    editor_client: Client, editor: Any
) -> None:
    thread, prompt, runs = regenerated(2)
    url = _compare_url(thread, prompt)
    response = editor_client.post(
        f"/runs/{runs[0].id}/rate/", {"preferred": "on", "note": "warmer tone", "next": url}
    )
    assert response.status_code == 303
    rating = RunRating.objects.get(run=runs[0], user=editor)
    assert rating.preferred and rating.note == "warmer tone" and rating.thread_id == thread.id
    content = editor_client.get(url).content.decode()
    assert "★ 1 preferred" in content and "warmer tone" in content and "★ Your preferred" in content
    assert "★ 1 preferred" in editor_client.get("/").content.decode()
    # Unmarking keeps the note but not the mark.
    editor_client.post(f"/runs/{runs[0].id}/rate/", {"note": "warmer tone", "next": url})
    rating.refresh_from_db()
    assert not rating.preferred and rating.note == "warmer tone"
    assert "★ 1 preferred" not in editor_client.get("/").content.decode()


def test_preferring_a_run_unmarks_the_users_other_preferred_runs_at_that_fork_point(
    editor: Any, moderator: Any
) -> None:
    thread = make_thread("Rivals")
    first = make_run(thread, user_message("Joke?"), ("text-delta", {"delta": "Knock knock"}))
    prompt = first.messages.get(position=0)
    second = say(thread, "A horse walks into a bar", fork_from=prompt.id)
    elsewhere = say(thread, "Another follow-up")  # below the second answer: not a rival
    ratings.rate_run(user=editor, run=second, preferred=True)
    ratings.rate_run(user=editor, run=elsewhere, preferred=True)
    ratings.rate_run(user=moderator, run=second, preferred=True)
    ratings.rate_run(user=editor, run=first, preferred=True, note="classic")
    preferred = {(r.user_id, r.run_id) for r in RunRating.objects.filter(preferred=True)}
    assert preferred == {
        (editor.pk, first.id),
        (editor.pk, elsewhere.id),
        (moderator.pk, second.id),
    }
    # The other way round too: the rivals of a run of one message include the longer run.
    ratings.rate_run(user=editor, run=second, preferred=True)
    assert not RunRating.objects.get(user=editor, run=first).preferred
    assert RunRating.objects.filter(user=editor).count() == 3


def test_rating_refuses_anonymous_users_open_runs_and_long_notes(editor: Any) -> None:
    from django.contrib.auth.models import AnonymousUser

    from transcripts.errors import InvalidInput

    thread, prompt, runs = regenerated(1)
    with pytest.raises(PermissionDenied):
        ratings.rate_run(user=AnonymousUser(), run=runs[0], preferred=True)
    live = make_run(thread, ("text-delta", {"delta": "typing"}), fork_from=prompt.id, commit=False)
    with pytest.raises(Conflict):
        ratings.rate_run(user=editor, run=live, preferred=True)
    with pytest.raises(InvalidInput):
        ratings.rate_run(user=editor, run=runs[0], preferred=True, note="x" * 2001)
    assert not RunRating.objects.exists()
    other = get_user_model().objects.create_user("other")
    with pytest.raises(PermissionDenied):  # a member of no project
        ratings.rate_run(user=other, run=runs[0], preferred=False, note="meh")
    set_member(project=default_project(), user=other, role="editor")
    ratings.rate_run(user=other, run=runs[0], preferred=False, note="meh")
    assert RunRating.objects.get().preferred is False
