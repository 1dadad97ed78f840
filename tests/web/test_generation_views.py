"""View tests of the generation actions: regenerate, edit, reply, stop, retry, restore, live run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.factories import ask, conversation, last_message, make_run, make_thread, say
from tests.web.conftest import message_at
from transcripts import ledger, selectors
from transcripts.generation import start as generation
from transcripts.generation.tasks import reap_expired_runs
from transcripts.models import OPEN_STATUSES, Message, Run, RunOrigin, RunStatus, Thread

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
OPTIONS = {"generator": "demo", "model": "", "temperature": "", "maxTokens": "", "systemPrompt": ""}


def _thread() -> tuple[Thread, Message, Message]:
    """A one-turn conversation; returns (thread, question, answer)."""
    thread = conversation(1)
    return thread, message_at(thread, 0), message_at(thread, 1)


def _open_run(thread: Thread, *words: str, fork_from: Any = ledger.HEAD) -> Run:
    """An open run started in the browser (an editor may stop it)."""
    deltas = [("text-delta", {"delta": w + " "}) for w in words]
    return make_run(
        thread, *deltas, fork_from=fork_from, commit=False, generator="demo", origin=RunOrigin.WEB
    )


def _superseded(thread: Thread, question: Message) -> Run:
    """Answer the question a second time; returns the run that was replaced."""
    first = Run.objects.get(messages__parent=question, status=RunStatus.COMMITTED)
    say(thread, "a second answer", fork_from=question.id)
    first.refresh_from_db()
    assert first.status == RunStatus.SUPERSEDED
    return first


# Each endpoint: (url for a thread/question/answer/run, POST data).
Endpoint = Callable[[Thread, Message, Message, Run], str]
ENDPOINTS: dict[str, tuple[Endpoint, dict[str, str]]] = {
    "regenerate": (lambda t, q, a, r: f"/t/{t.id}/m/{a.id}/regenerate/", OPTIONS),
    "edit": (lambda t, q, a, r: f"/t/{t.id}/m/{q.id}/edit/", {**OPTIONS, "text": "edited"}),
    "reply": (lambda t, q, a, r: f"/t/{t.id}/reply/", {**OPTIONS, "text": "more"}),
    "cancel": (lambda t, q, a, r: f"/runs/{r.id}/cancel/", {}),
    "retry": (lambda t, q, a, r: f"/runs/{r.id}/retry/", {}),
    "restore": (lambda t, q, a, r: f"/runs/{r.id}/restore/", {}),
}


def _target(name: str) -> tuple[Thread, str, dict[str, str]]:
    """A thread and the URL + data of the endpoint called name, set up so the action can work."""
    thread, question, answer = _thread()
    if name == "cancel":
        run = _open_run(thread, "streaming")
    elif name == "retry":
        run = _open_run(thread, "partial")
        ledger.fail_run(run=run, error="boom")
    elif name == "restore":
        run = _superseded(thread, question)
        answer = message_at(thread, 1)
    else:
        run = Run.objects.filter(thread=thread).first()  # type: ignore[assignment]
    url, data = ENDPOINTS[name]
    return thread, url(thread, question, answer, run), data


def _snapshot() -> tuple[int, int, list[tuple[str, str]]]:
    """What a refused action must leave untouched."""
    return (
        Run.objects.count(),
        Message.objects.count(),
        sorted(Run.objects.values_list("id", "status")),
    )


# --- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ENDPOINTS)
def test_an_outsider_is_sent_to_the_login_page_and_nothing_happens(
    outsider: Client, name: str
) -> None:
    _, url, data = _target(name)
    before = _snapshot()
    response = outsider.post(url, data)
    assert response.status_code == 302
    assert "login" in response["Location"]
    assert _snapshot() == before


@pytest.mark.parametrize("name", ENDPOINTS)
def test_the_actions_take_only_post(editor_client: Client, name: str) -> None:
    _, url, _ = _target(name)
    before = _snapshot()
    assert editor_client.get(url).status_code == 405
    assert _snapshot() == before


@pytest.mark.parametrize("name", ENDPOINTS)
def test_the_actions_need_a_csrf_token(editor: Any, name: str) -> None:
    _, url, data = _target(name)
    client = Client(enforce_csrf_checks=True)
    client.force_login(editor)
    before = _snapshot()
    assert client.post(url, data).status_code == 403
    assert _snapshot() == before


REFUSED_WHEN_CLOSED = [name for name in ENDPOINTS if name != "cancel"]


@pytest.mark.parametrize("name", REFUSED_WHEN_CLOSED)
def test_a_hidden_thread_is_a_404_for_editors_and_a_refusal_for_moderators(
    editor_client: Client, moderator_client: Client, name: str
) -> None:
    thread, url, data = _target(name)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    before = _snapshot()
    assert editor_client.post(url, data).status_code == 404
    assert editor_client.post(url, data, headers=HTMX).status_code == 404
    response = moderator_client.post(url, data)
    assert response.status_code == 409
    assert b"hidden by moderation" in response.content
    assert _snapshot() == before


@pytest.mark.parametrize("name", REFUSED_WHEN_CLOSED)
def test_a_locked_thread_refuses_with_a_clear_message(editor_client: Client, name: str) -> None:
    thread, url, data = _target(name)
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    before = _snapshot()
    response = editor_client.post(url, data)
    assert response.status_code == 409
    assert b"This thread is locked" in response.content
    assert b"<html" in response.content  # a whole page without JavaScript
    fragment = editor_client.post(url, data, headers=HTMX)
    assert fragment.status_code == 409
    assert fragment["X-Refusal"] == "1"
    assert b"This thread is locked" in fragment.content
    assert b"<html" not in fragment.content
    assert _snapshot() == before


@pytest.mark.parametrize(
    "url",
    [
        "/t/{thread}/m/01ARZ3NDEKTSV4RRFFQ69G5FAV/regenerate/",
        "/t/{thread}/m/not-an-id/edit/",
        "/t/01ARZ3NDEKTSV4RRFFQ69G5FAV/reply/",
        "/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV/cancel/",
        "/runs/nope/retry/",
        "/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV/restore/",
        "/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV/live/",
    ],
)
def test_unknown_ids_are_a_404(editor_client: Client, url: str) -> None:
    thread, _, _ = _thread()
    before = _snapshot()
    method = editor_client.get if url.endswith("/live/") else editor_client.post
    assert method(url.format(thread=thread.id), {**OPTIONS, "text": "x"}).status_code == 404
    assert _snapshot() == before


def test_a_message_or_run_of_another_thread_is_a_404(editor_client: Client) -> None:
    thread, _, _ = _thread()
    other, question, answer = _thread()
    superseded = _superseded(other, question)
    before = _snapshot()
    assert (
        editor_client.post(f"/t/{thread.id}/m/{answer.id}/regenerate/", OPTIONS).status_code == 404
    )
    # The one restore endpoint is the run's: no thread-scoped variant is left to mismatch.
    assert editor_client.post(f"/t/{thread.id}/restore/{superseded.id}/").status_code == 404
    assert _snapshot() == before


# --- regenerate, edit, reply -------------------------------------------------------------


def test_regenerate_queues_a_run_forked_from_the_parent_and_goes_back_to_it(
    editor_client: Client,
) -> None:
    thread, question, answer = _thread()
    data = {**OPTIONS, "model": "demo-2", "temperature": "0.4", "maxTokens": "50"}
    data["systemPrompt"] = "Be brief."
    response = editor_client.post(f"/t/{thread.id}/m/{answer.id}/regenerate/", data)
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert run.fork_from_id == question.id
    assert (run.generator, run.model) == ("demo", "demo-2")
    assert run.parameters == {"temperature": 0.4, "maxTokens": 50, "systemPrompt": "Be brief."}
    assert response.status_code == 302
    assert response["Location"] == f"/t/{thread.id}/?leaf={question.id}#run-{run.id}"


def test_an_htmx_regenerate_swaps_the_conversation_in_place(editor_client: Client) -> None:
    thread, question, answer = _thread()
    response = editor_client.post(
        f"/t/{thread.id}/m/{answer.id}/regenerate/", OPTIONS, headers=HTMX
    )
    assert response.status_code == 200
    location = json.loads(response["HX-Location"])
    assert location == {
        "path": f"/t/{thread.id}/?leaf={question.id}",
        "target": "#conversation",
        "swap": "outerHTML",
    }


def test_only_an_assistant_message_can_be_regenerated(editor_client: Client) -> None:
    thread, question, _ = _thread()
    before = _snapshot()
    response = editor_client.post(f"/t/{thread.id}/m/{question.id}/regenerate/", OPTIONS)
    assert response.status_code == 422
    assert b"only an assistant message can be regenerated" in response.content
    assert _snapshot() == before


def test_edit_queues_a_run_whose_first_event_is_the_edited_message(editor_client: Client) -> None:
    thread, _, answer = _thread()
    ask(thread, "follow-up")
    follow_up = message_at(thread, 2)
    data = {**OPTIONS, "text": "A better question?"}
    response = editor_client.post(f"/t/{thread.id}/m/{follow_up.id}/edit/", data)
    run = Run.objects.get(thread=thread, status__in=OPEN_STATUSES)
    assert run.fork_from_id == answer.id
    first = selectors.project_run(run).messages[0]
    assert first["role"] == "user"
    assert first["parts"] == [{"type": "text", "text": "A better question?"}]
    assert response["Location"] == f"/t/{thread.id}/?leaf={answer.id}#run-{run.id}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**OPTIONS, "text": ""}, b"The message is empty"),
        ({**OPTIONS, "text": "   "}, b"The message is empty"),
        ({**OPTIONS, "text": "ok", "temperature": "5"}, b"Temperature"),
        ({**OPTIONS, "text": "ok", "maxTokens": "0"}, b"Max tokens"),
        ({**OPTIONS, "text": "ok", "temperature": "hot"}, b"Temperature"),
        ({**OPTIONS, "text": "ok", "generator": "nope"}, b"Generator"),
        ({"text": "ok"}, b"Generator"),
    ],
)
@pytest.mark.parametrize("action", ["edit", "reply"])
def test_bad_input_is_a_422_with_a_message_and_nothing_is_created(
    editor_client: Client, data: dict[str, str], message: bytes, action: str
) -> None:
    thread, question, _ = _thread()
    url = f"/t/{thread.id}/m/{question.id}/edit/" if action == "edit" else f"/t/{thread.id}/reply/"
    before = _snapshot()
    response = editor_client.post(url, data)
    assert response.status_code == 422
    assert message in response.content
    fragment = editor_client.post(url, data, headers=HTMX)
    assert fragment.status_code == 422 and message in fragment.content
    assert _snapshot() == before


def test_bad_options_are_refused_when_regenerating_too(editor_client: Client) -> None:
    thread, _, answer = _thread()
    before = _snapshot()
    data = {**OPTIONS, "temperature": "3"}
    response = editor_client.post(f"/t/{thread.id}/m/{answer.id}/regenerate/", data)
    assert response.status_code == 422
    assert b"Temperature" in response.content
    assert _snapshot() == before


def test_only_a_user_message_can_be_edited(editor_client: Client) -> None:
    thread, _, answer = _thread()
    before = _snapshot()
    data = {**OPTIONS, "text": "x"}
    response = editor_client.post(f"/t/{thread.id}/m/{answer.id}/edit/", data)
    assert response.status_code == 422
    assert b"only a user message can be edited" in response.content
    assert _snapshot() == before


def test_reply_commits_the_message_and_queues_its_answer(editor_client: Client, settings) -> None:
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    thread, _, answer = _thread()
    data = {**OPTIONS, "text": "Tell me more", "generator": "external", "model": "my-agent"}
    response = editor_client.post(f"/t/{thread.id}/reply/", data, headers=HTMX)
    thread.refresh_from_db()
    asked = thread.head
    assert asked is not None and asked.role == "user" and asked.parent_id == answer.id
    assert asked.parts == [{"type": "text", "text": "Tell me more"}]
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert (run.fork_from_id, run.generator, run.model) == (asked.id, "external", "my-agent")
    assert json.loads(response["HX-Location"])["path"] == f"/t/{thread.id}/?leaf={asked.id}"


def test_a_reply_to_an_empty_thread_starts_it(editor_client: Client) -> None:
    thread = make_thread("Empty")
    page = editor_client.get(f"/t/{thread.id}/")
    assert b'id="reply"' in page.content
    editor_client.post(f"/t/{thread.id}/reply/", {**OPTIONS, "text": "Hello"})
    thread.refresh_from_db()
    assert thread.head is not None and thread.head.parent_id is None


# --- the conversation page ---------------------------------------------------------------


def test_the_conversation_offers_regenerate_edit_and_reply_with_the_last_choice(
    editor_client: Client, settings
) -> None:
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    thread, question, answer = _thread()
    generation.start_regenerate(
        message=answer,
        generator="external",
        model="my-agent",
        parameters={"temperature": 0.7, "maxTokens": 300, "systemPrompt": "Be terse."},
    )
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'action="/t/{thread.id}/m/{answer.id}/regenerate/"' in html
    assert f'action="/t/{thread.id}/m/{question.id}/edit/"' in html
    assert f'action="/t/{thread.id}/m/{question.id}/regenerate/"' not in html
    assert f'action="/t/{thread.id}/reply/"' not in html  # a run is open at the head
    assert '<option value="external:my-agent" selected>' in html  # the model select
    assert 'name="model" value="my-agent"' in html  # the one-click Regenerate repeats it
    assert 'name="temperature" min="0" max="2" step="0.1" value="0.7"' in html
    assert 'value="300"' in html
    assert "Be terse.</textarea>" in html
    assert "hx-sse" in html  # the SSE extension is loaded


def test_the_reply_box_is_at_the_head_of_the_active_branch_only(editor_client: Client) -> None:
    thread, question, _ = _thread()
    old = _superseded(thread, question)
    url = f"/t/{thread.id}/"
    assert b'id="reply"' in editor_client.get(url).content
    old_answer = last_message(old)
    assert b'id="reply"' not in editor_client.get(f"{url}?leaf={old_answer.id}").content


def test_an_open_run_shows_live_after_its_fork_point(editor_client: Client) -> None:
    thread, question, answer = _thread()
    run = _open_run(thread, "Fresh", "words", fork_from=question.id)
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    live = html.index(f'id="run-{run.id}"')
    assert html.index(f'id="m-{question.id}"') < live < html.index(f'id="m-{answer.id}"')
    assert f'sse-connect="/api/v1/runs/{run.id}/stream?afterSeq=2"' in html
    assert f'hx-get="/runs/{run.id}/live/"' in html
    assert "sse:text-delta throttle:100ms" in html and "sse:status" in html
    assert "Fresh words" in html[live:]
    assert f'action="/runs/{run.id}/cancel/"' in html
    # The branch switcher of a live message would point at a message that does not exist yet.
    assert f"?leaf={last_message_id(run)}" not in html


def last_message_id(run: Run) -> str:
    return str(selectors.project_run(run).messages[-1]["id"])


def test_an_open_run_from_a_new_root_shows_at_the_top(editor_client: Client) -> None:
    thread, question, _ = _thread()
    run = generation.start_edit(message=question, text="From scratch")
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert html.index(f'id="run-{run.id}"') < html.index(f'id="m-{question.id}"')
    assert "From scratch" in html


def test_a_locked_thread_shows_no_actions_and_says_why(editor_client: Client) -> None:
    thread, question, _ = _thread()
    old = _superseded(thread, question)
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    html = editor_client.get(f"/t/{thread.id}/?leaf={last_message(old).id}").content.decode()
    assert "/regenerate/" not in html and "/edit/" not in html
    assert f"/runs/{old.id}/restore/" not in html
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert "This thread is locked" in html
    assert 'id="reply"' not in html


def test_the_conversation_runs_a_constant_number_of_queries_with_the_actions(
    editor_client: Client,
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for turns in (1, 20):
        thread = conversation(turns)
        with CaptureQueriesContext(connection) as captured:
            assert editor_client.get(f"/t/{thread.id}/").status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]


# --- stop, retry, restore ----------------------------------------------------------------


def test_stop_keeps_what_streamed_as_the_active_branch_marked_stopped(
    editor_client: Client,
) -> None:
    thread, question, old_answer = _thread()
    run = _open_run(thread, "half", "an", fork_from=question.id)
    response = editor_client.post(f"/runs/{run.id}/cancel/", headers=HTMX)
    run.refresh_from_db()
    assert run.status == RunStatus.COMMITTED and run.metadata["stopped"] is True
    kept = last_message(run)
    assert json.loads(response["HX-Location"])["path"] == f"/t/{thread.id}/?leaf={kept.id}"
    html = editor_client.get(f"/t/{thread.id}/").content.decode()
    article = html[html.index(f'id="m-{kept.id}"') :]
    assert "is-stopped" in html[html.index(f'id="m-{kept.id}"') - 200 :][:400]
    assert '<span class="tag tag-stopped"' in article and "half an" in article
    assert f'action="/t/{thread.id}/m/{kept.id}/continue/"' in html
    assert f'action="/t/{thread.id}/m/{kept.id}/regenerate/"' in html
    old_answer.refresh_from_db()
    assert not old_answer.active


def test_stop_before_anything_streamed_cancels_and_offers_retry(editor_client: Client) -> None:
    thread, question, _ = _thread()
    run = _open_run(thread, fork_from=question.id)
    response = editor_client.post(f"/runs/{run.id}/cancel/", headers=HTMX)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    html = response.content.decode()
    assert response.status_code == 200
    assert "Stopped. Nothing was generated yet" in html
    assert f'action="/runs/{run.id}/retry/"' in html
    assert 'data-status="cancelled"' in html


def test_stopping_an_agents_run_in_the_browser_cancels_it_as_the_api_does(db: Any) -> None:
    from tests.web.conftest import _client, _member

    owner_client = _client(_member("default-admin", "admin"))
    thread, question, _ = _thread()
    deltas = [("text-delta", {"delta": "agent words"})]
    run = make_run(thread, *deltas, fork_from=question.id, commit=False, origin=RunOrigin.API)
    response = owner_client.post(f"/runs/{run.id}/cancel/", headers=HTMX)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert "agent words" in response.content.decode()
    assert not Message.objects.filter(run=run).exists()


def test_a_run_can_still_be_stopped_after_its_thread_was_locked_or_hidden(
    editor_client: Client, moderator_client: Client
) -> None:
    for closing in ({"locked": True}, {"hidden": True}):
        thread, _, _ = _thread()
        run = _open_run(thread, "streaming")
        Thread.objects.filter(pk=thread.pk).update(**closing)
        client = moderator_client if "hidden" in closing else editor_client
        assert client.post(f"/runs/{run.id}/cancel/", headers=HTMX).status_code == 200
        run.refresh_from_db()
        assert run.status == RunStatus.CANCELLED
    hidden_run = _open_run(_thread()[0], "streaming")
    Thread.objects.filter(pk=hidden_run.thread_id).update(hidden=True)
    assert editor_client.post(f"/runs/{hidden_run.id}/cancel/").status_code == 404
    hidden_run.refresh_from_db()
    assert hidden_run.is_open


def test_stop_without_javascript_goes_back_to_the_conversation(editor_client: Client) -> None:
    thread, _, _ = _thread()
    run = _open_run(thread, "x")
    response = editor_client.post(f"/runs/{run.id}/cancel/")
    assert response.status_code == 302
    kept = last_message(Run.objects.get(pk=run.id))
    assert response["Location"] == f"/t/{thread.id}/?leaf={kept.id}#m-{kept.id}"
    nothing = _open_run(_thread()[0])
    response = editor_client.post(f"/runs/{nothing.id}/cancel/")
    assert response["Location"] == f"/t/{nothing.thread_id}/"


def test_stopping_a_closed_run_is_a_409_with_a_message(editor_client: Client) -> None:
    thread, _, _ = _thread()
    run = ledger.commit_run(run=_open_run(thread, "done"))
    before = _snapshot()
    response = editor_client.post(f"/runs/{run.id}/cancel/", headers=HTMX)
    assert response.status_code == 409
    assert b"a committed run cannot be stopped" in response.content
    assert _snapshot() == before


def test_retry_queues_the_failed_generation_again(editor_client: Client) -> None:
    thread, question, _ = _thread()
    failed = generation.start_regenerate(message=message_at(thread, 1), model="demo-2")
    ledger.fail_run(run=failed, error="the model went away")
    response = editor_client.post(f"/runs/{failed.id}/retry/", headers=HTMX)
    again = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert again.metadata == {"retryOf": failed.id}
    assert (again.fork_from_id, again.model) == (question.id, "demo-2")
    assert json.loads(response["HX-Location"])["path"] == f"/t/{thread.id}/?leaf={question.id}"


def test_only_a_failed_or_stopped_run_can_be_retried(editor_client: Client) -> None:
    thread, _, _ = _thread()
    run = Run.objects.filter(thread=thread).first()
    assert run is not None
    before = _snapshot()
    response = editor_client.post(f"/runs/{run.id}/retry/")
    assert response.status_code == 422
    assert b"only a failed or cancelled run can be retried" in response.content
    assert _snapshot() == before


def test_a_failed_run_shows_its_partial_output_error_and_retry(editor_client: Client) -> None:
    thread, question, _ = _thread()
    run = _open_run(thread, "so", "far", fork_from=question.id)
    ledger.fail_run(run=run, error={"message": "the model went away", "code": "gone"})
    html = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX).content.decode()
    assert "so far" in html
    assert "the model went away" in html and "gone" in html
    assert f'action="/runs/{run.id}/retry/"' in html


def test_restore_makes_a_superseded_branch_active_again(editor_client: Client) -> None:
    thread, question, _ = _thread()
    old = _superseded(thread, question)
    old_answer = last_message(old)
    html = editor_client.get(f"/t/{thread.id}/?leaf={old_answer.id}").content.decode()
    assert f'action="/runs/{old.id}/restore/"' in html
    assert f'name="next" value="/t/{thread.id}/"' in html
    data = {"next": f"/t/{thread.id}/"}
    response = editor_client.post(f"/runs/{old.id}/restore/", data, headers=HTMX)
    # htmx follows the redirect; the form swaps in the conversation section of the answer.
    assert response.status_code == 303 and response["Location"] == f"/t/{thread.id}/"
    old.refresh_from_db()
    thread.refresh_from_db()
    assert old.status == RunStatus.COMMITTED
    assert thread.head_id == old_answer.id
    section = editor_client.get(f"/t/{thread.id}/", headers=HTMX).content.decode()
    assert section.lstrip().startswith('<section id="conversation"')
    assert "Restored: this branch is the active one again." in section
    assert "/restore/" not in editor_client.get(f"/t/{thread.id}/").content.decode()
    # Now the second answer is the superseded one, and can be restored in turn.
    second = Run.objects.get(thread=thread, status=RunStatus.SUPERSEDED)
    html = editor_client.get(f"/t/{thread.id}/?leaf={last_message(second).id}").content.decode()
    assert f'action="/runs/{second.id}/restore/"' in html


def test_restoring_a_run_that_was_not_superseded_is_a_409(editor_client: Client) -> None:
    thread, _, _ = _thread()
    run = _open_run(thread, "x")
    before = _snapshot()
    response = editor_client.post(f"/runs/{run.id}/restore/")
    assert response.status_code == 409
    assert b"only a superseded run can be restored" in response.content
    assert _snapshot() == before


# --- the live block ----------------------------------------------------------------------


def test_the_live_block_renders_the_projection_so_far(editor_client: Client) -> None:
    thread, question, _ = _thread()
    run = make_run(
        thread,
        ("reasoning", {"text": "Thinking it over"}),
        ("tool-call", {"toolCallId": "c1", "toolName": "lookup", "input": {"q": 1}}),
        ("tool-result", {"toolCallId": "c1", "toolName": "lookup", "output": {"a": 2}}),
        ("text-delta", {"delta": "Streaming **bold**"}),
        fork_from=question.id,
        commit=False,
    )
    response = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert "Thinking it over" in html and "lookup" in html
    assert "<strong>bold</strong>" in html
    assert 'data-status="streaming"' in html


def test_the_live_block_of_a_committed_run_loads_the_conversation(editor_client: Client) -> None:
    thread, _, _ = _thread()
    run = Run.objects.filter(thread=thread).first()
    assert run is not None
    response = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX)
    assert json.loads(response["HX-Location"]) == {
        "path": f"/t/{thread.id}/",
        "target": "#conversation",
        "swap": "outerHTML",
    }
    assert editor_client.get(f"/runs/{run.id}/live/")["Location"] == f"/t/{thread.id}/"


def test_the_live_block_follows_the_access_rules(
    outsider: Client, editor_client: Client, moderator_client: Client
) -> None:
    thread, _, _ = _thread()
    run = _open_run(thread, "x")
    url = f"/runs/{run.id}/live/"
    assert outsider.get(url).status_code == 302
    assert editor_client.post(url).status_code == 405
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    assert editor_client.get(url, headers=HTMX).status_code == 404
    assert moderator_client.get(url, headers=HTMX).status_code == 200


def test_a_committed_branch_left_behind_mid_run_can_be_restored(editor_client: Client) -> None:
    thread = make_thread("one run holds the question and the answer")
    both = make_run(
        thread,
        ("message", {"role": "user", "parts": [{"type": "text", "text": "q"}]}),
        ("text-delta", {"delta": "first answer"}),
    )
    prompt, first = list(both.messages.order_by("position"))
    make_run(thread, ("text-delta", {"delta": "second answer"}), fork_from=prompt.id)
    html = editor_client.get(f"/t/{thread.id}/?leaf={first.id}").content.decode()
    assert f'action="/runs/{both.id}/restore/"' in html
    editor_client.post(f"/runs/{both.id}/restore/", {"next": f"/t/{thread.id}/"})
    thread.refresh_from_db()
    assert thread.head_id == first.id


def test_a_run_queued_again_after_its_worker_died_says_so(editor_client: Client, settings) -> None:
    settings.TRANSCRIPTS_REQUEUE_EXPIRED = True
    thread, question, _ = _thread()
    dead = generation.start_regenerate(message=message_at(thread, 1))
    ledger.claim_run(run=dead.id, worker="gone:1", lease_seconds=0.001)
    ledger.append_events(
        run=dead.id, events=[{"seq": 1, "kind": "text-delta", "data": {"delta": "hal"}}]
    )
    Run.objects.filter(pk=dead.id).update(lease_expires_at="2000-01-01T00:00:00Z")
    [again_of] = reap_expired_runs()
    again = Run.objects.get(metadata__retryOf=again_of)

    failed = editor_client.get(f"/runs/{dead.id}/live/", headers=HTMX).content.decode()
    assert "stopped responding" in failed and "lease_expired" in failed
    assert "a new attempt was queued." in failed
    assert f'action="/runs/{dead.id}/retry/"' not in failed  # no second retry by hand
    assert f"#run-{again.id}" in failed

    page = editor_client.get(f"/t/{thread.id}/?leaf={question.id}").content.decode()
    assert f'id="run-{again.id}"' in page
    assert "a new attempt of a run that failed" in page


def test_the_live_block_shows_a_stalled_run_read_only_until_a_sweep_fails_it(
    editor_client: Client,
) -> None:
    thread, question, _ = _thread()
    run = generation.start_regenerate(message=message_at(thread, 1))
    ledger.claim_run(run=run.id, worker="gone:1", lease_seconds=30)
    page = editor_client.get(f"/t/{thread.id}/?leaf={question.id}").content.decode()
    assert f'id="run-{run.id}"' in page and "every 10s" in page  # it looks again
    alive = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX).content.decode()
    assert 'data-status="streaming"' in alive and "stopped responding" not in alive
    Run.objects.filter(pk=run.id).update(lease_expires_at="2000-01-01T00:00:00Z")
    before = Run.objects.values().get(pk=run.pk)

    stalled = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX).content.decode()
    assert 'data-status="streaming"' in stalled
    assert "Its worker stopped responding" in stalled and "gone:1" in stalled
    assert "2000-01-01 00:00:00 UTC" in stalled  # when its lease lapsed
    assert f'action="/runs/{run.id}/cancel/"' in stalled  # still open: it can be stopped
    editor_client.get(f"/t/{thread.id}/?leaf={question.id}")
    assert Run.objects.values().get(pk=run.pk) == before  # reading changed nothing

    reap_expired_runs()  # what any worker's sweeper does
    html = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX).content.decode()
    assert 'data-status="failed"' in html and "Its worker stopped responding" not in html
    assert "the worker &#x27;gone:1&#x27; stopped responding" in html
    assert f'action="/runs/{run.id}/retry/"' in html
    assert Run.objects.values_list("status", flat=True).get(pk=run.pk) == RunStatus.FAILED


def test_the_live_run_tag_leaves_the_header_when_the_run_ends(editor_client: Client) -> None:
    thread, question, _ = _thread()
    run = _open_run(thread, "so", "far", fork_from=question.id)
    tag = f'<a class="tag tag-live" href="/runs/{run.id}/">'
    page = editor_client.get(f"/t/{thread.id}/").content.decode()
    assert f'<span id="live-tag">{tag}' in page and "hx-swap-oob" not in page
    # The last live update of a failed run takes the header's tag away (out of band).
    ledger.fail_run(run=run, error={"message": "gone"})
    fragment = editor_client.get(f"/runs/{run.id}/live/", headers=HTMX).content.decode()
    assert '<span id="live-tag" hx-swap-oob="true"></span>' in fragment and tag not in fragment
    # So does a committed run's: it loads the conversation, which brings the tag along.
    again = _open_run(thread, "more", fork_from=question.id)
    swapped = editor_client.get(f"/t/{thread.id}/", headers=HTMX).content.decode()
    assert (
        f'<span id="live-tag" hx-swap-oob="true"><a class="tag tag-live" href="/runs/{again.id}/">'
        in swapped
    )
    ledger.commit_run(run=again)
    swapped = editor_client.get(f"/t/{thread.id}/", headers=HTMX).content.decode()
    assert '<span id="live-tag" hx-swap-oob="true"></span>' in swapped
