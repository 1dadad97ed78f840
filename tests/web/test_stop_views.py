"""Stop keeps what streamed, Continue, Generate answer and the one-click Regenerate: who may,
and what the conversation offers."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.base import Team
from tests.factories import ask, make_run, make_thread, say
from transcripts import ledger
from transcripts.models import Message, Project, Run, RunOrigin, RunStatus, Thread

pytestmark = pytest.mark.django_db


def _stopped(project: Project) -> tuple[Thread, Message, Message]:
    """A thread whose answer was regenerated and stopped: (thread, question, stopped answer)."""
    thread = make_thread("Stopped", project=project)
    ask(thread, "What is a fork point?")
    say(thread, "The message a branch starts from.")
    question = Message.objects.get(thread=thread, role="user")
    run = make_run(
        thread,
        ("text-delta", {"delta": "It is the "}),
        fork_from=question.id,
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )
    ledger.stop_run(run=run)
    thread.refresh_from_db()
    return thread, question, Message.objects.get(run=run)


def _unanswered(project: Project) -> tuple[Thread, Message]:
    """A thread ending in a user message whose answer was stopped before its first token."""
    thread = make_thread("Unanswered", project=project)
    ask(thread, "Anyone?")
    question = Message.objects.get(thread=thread, role="user")
    run = make_run(
        thread, fork_from=question.id, commit=False, generator="demo", origin=RunOrigin.WEB
    )
    assert ledger.stop_run(run=run).status == RunStatus.CANCELLED
    thread.refresh_from_db()
    return thread, question


def _urls(team: Team) -> list[str]:
    thread, _, stopped = _stopped(team.alpha)
    other, question = _unanswered(team.alpha)
    return [
        f"/t/{thread.id}/m/{stopped.id}/continue/",
        f"/t/{other.id}/m/{question.id}/answer/",
    ]


def test_an_outsider_gets_404_and_nothing_starts(team: Team) -> None:
    urls = _urls(team)
    runs = Run.objects.count()
    for url in urls:
        assert team.client(team.outsider).post(url, {"generator": "demo"}).status_code == 404
        assert team.client(team.stranger).post(url, {"generator": "demo"}).status_code == 404
        assert Client().post(url).status_code == 302  # to the login page
    assert Run.objects.count() == runs


def test_a_viewer_gets_403_naming_the_role(team: Team) -> None:
    urls = _urls(team)
    runs = Run.objects.count()
    for url in urls:
        response = team.client(team.viewer).post(url, {"generator": "demo"})
        assert response.status_code == 403
        assert b"editor" in response.content
    assert Run.objects.count() == runs


def test_an_editor_continues_a_stopped_answer(team: Team) -> None:
    thread, question, stopped = _stopped(team.alpha)
    url = f"/t/{thread.id}/m/{stopped.id}/continue/"
    response = team.client(team.editor).post(url, {"generator": "demo", "model": "demo-brief"})
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert response.status_code == 302 and response["Location"].endswith(f"#run-{run.id}")
    assert (run.fork_from_id, run.model, run.metadata) == (
        question.id,
        "demo-brief",
        {"continues": stopped.id},
    )
    assert run.events.get().data == {"delta": "It is the "}


def test_an_editor_generates_the_missing_answer(team: Team) -> None:
    thread, question = _unanswered(team.alpha)
    url = f"/t/{thread.id}/m/{question.id}/answer/"
    response = team.client(team.editor).post(
        url, {"choice": "demo:demo-detailed"}, headers={"HX-Request": "true"}
    )
    assert "HX-Location" in response
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert (run.fork_from_id, run.generator, run.model) == (question.id, "demo", "demo-detailed")


def test_continue_is_refused_on_an_answer_that_was_not_stopped(team: Team) -> None:
    thread, _, _ = _stopped(team.alpha)
    finished = Message.objects.get(thread=thread, role="assistant", run__metadata={})
    url = f"/t/{thread.id}/m/{finished.id}/continue/"
    response = team.client(team.editor).post(url, {"generator": "demo"})
    assert response.status_code == 422
    assert Run.objects.filter(thread=thread, status=RunStatus.QUEUED).count() == 0
    answer_url = f"/t/{thread.id}/m/{finished.id}/answer/"
    assert team.client(team.editor).post(answer_url, {"generator": "demo"}).status_code == 422


def test_an_unknown_model_choice_is_a_422_naming_the_field(team: Team) -> None:
    thread, question = _unanswered(team.alpha)
    url = f"/t/{thread.id}/m/{question.id}/answer/"
    response = team.client(team.editor).post(url, {"choice": "nonsense:x"})
    assert response.status_code == 422 and b"Model" in response.content
    assert not Run.objects.filter(thread=thread, status=RunStatus.QUEUED).exists()


def test_the_conversation_offers_continue_generate_answer_and_a_one_click_regenerate(
    team: Team,
) -> None:
    thread, _, stopped = _stopped(team.alpha)
    html = team.client(team.editor).get(f"/t/{thread.id}/").content.decode()
    article = html[html.index(f'id="m-{stopped.id}"') :]
    assert '<span class="tag tag-stopped"' in article[:3000]
    assert f'action="/t/{thread.id}/m/{stopped.id}/continue/"' in article
    # Regenerate is a form with the last choice in hidden fields, plus a menu for another.
    regenerate = article[article.index(f'action="/t/{thread.id}/m/{stopped.id}/regenerate/"') :]
    assert '<input type="hidden" name="generator" value="demo">' in regenerate[:600]
    assert '<input type="hidden" name="model" value="demo-1">' in regenerate[:600]
    assert 'class="gen-pop gen-more"' in article
    assert '<optgroup label="Demo (offline)">' in html
    assert '<option value="demo:demo-brief">' in html
    assert '<input type="text" name="model"' not in html  # no free-text model box

    other, question = _unanswered(team.alpha)
    html = team.client(team.editor).get(f"/t/{other.id}/").content.decode()
    assert f'action="/t/{other.id}/m/{question.id}/answer/"' in html
    viewer_html = team.client(team.viewer).get(f"/t/{other.id}/").content.decode()
    assert "/answer/" not in viewer_html and "/regenerate/" not in viewer_html


def test_the_stop_answer_of_htmx_swaps_the_conversation_at_the_stopped_message(
    team: Team,
) -> None:
    thread = make_thread("Streaming", project=team.alpha)
    ask(thread, "Go on")
    run = make_run(
        thread,
        ("text-delta", {"delta": "Partial"}),
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )
    response = team.client(team.editor).post(
        f"/runs/{run.id}/cancel/", headers={"HX-Request": "true"}
    )
    kept = Message.objects.get(run=run)
    location = json.loads(response["HX-Location"])
    assert location["path"] == f"/t/{thread.id}/?leaf={kept.id}"
    assert location["target"] == "#conversation"
