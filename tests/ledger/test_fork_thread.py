"""A new thread from any message: only the branch from the root to it, under new ids, with
the same content; the source unchanged; audited; hidden threads refused; redactions kept."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from tests.ledger.invariants import check_all
from transcripts import selectors
from transcripts.errors import Conflict, PermissionDenied
from transcripts.ledger import moderation
from transcripts.ledger.fork_thread import fork_thread
from transcripts.models import AuditRecord, Message, Project, Run, Thread

pytestmark = pytest.mark.django_db


def _branched(project: Project) -> tuple[Thread, list[Message], Message]:
    """question, answer, follow-up, answer on the active branch; the first answer regenerated
    (an alternative). Returns the thread, its active path and the alternative answer."""
    thread = make_thread("Capitals", project=project)
    prompt = last_message(ask(thread, "Capital of France?"))
    other = last_message(say(thread, "Marseille"))
    say(thread, "Paris", fork_from=prompt.id)
    ask(thread, "And of Italy?")
    say(thread, "Rome")
    thread.refresh_from_db()
    return thread, list(selectors.active_path(thread)), other


def _snapshot(thread: Thread) -> list[object]:
    """Everything of a thread's messages and runs, to compare before and after."""
    return [
        *Message.objects.filter(thread=thread).order_by("id").values(),
        *Run.objects.filter(thread=thread).order_by("id").values(),
        Thread.objects.filter(pk=thread.pk).values().get(),
    ]


def _content(messages: list[Message]) -> list[tuple[str, list[Any], dict[str, Any]]]:
    return [
        (m.role, m.parts, {k: v for k, v in m.metadata.items() if k != "sourceMessageId"})
        for m in messages
    ]


def test_the_path_to_the_message_is_copied_under_new_ids(team: Team) -> None:
    thread, path, alternative = _branched(team.alpha)
    before = _snapshot(thread)
    leaf = path[2]  # the follow-up question, message 3

    fork = fork_thread(message=leaf, user=team.editor)

    copied = list(selectors.active_path(fork))
    assert _content(copied) == _content(path[:3])
    assert not {m.id for m in copied} & {m.id for m in path}
    assert Message.objects.filter(thread=fork).count() == 3  # not the alternative, not Rome
    assert [m.metadata["sourceMessageId"] for m in copied] == [m.id for m in path[:3]]
    assert fork.project_id == thread.project_id and fork.parent_thread_id == thread.id
    assert fork.title == "Capitals (from message 3)"
    assert fork.metadata["forkedFrom"] == {
        "threadId": thread.id,
        "title": "Capitals",
        "messageId": leaf.id,
        "position": 3,
    }
    fork.refresh_from_db()
    assert fork.head_id == copied[-1].id
    check_all([fork])
    assert _snapshot(thread) == before
    assert alternative.id not in {m.metadata.get("sourceMessageId") for m in copied}
    record = AuditRecord.objects.get(action="fork")
    assert record.actor == team.editor and record.target_id == fork.id
    assert record.project_id == team.alpha.pk
    assert record.details["sourceMessageId"] == leaf.id and record.details["messages"] == 3


def test_an_alternative_branch_forks_through_itself(team: Team) -> None:
    _thread, _path, alternative = _branched(team.alpha)

    fork = fork_thread(message=alternative, user=team.editor)

    copied = list(selectors.active_path(fork))
    assert [m.parts[0]["text"].strip() for m in copied] == ["Capital of France?", "Marseille"]
    check_all([fork])


def test_runs_keep_their_model_but_not_their_usage(team: Team) -> None:
    thread = make_thread("Costly", project=team.alpha)
    ask(thread, "hi")
    answer = last_message(say(thread, "hello", model="m-1"))
    Run.objects.filter(pk=answer.run_id).update(usage={"inputTokens": 5})

    fork = fork_thread(message=answer, user=team.editor)

    runs = list(Run.objects.filter(thread=fork).order_by("created_at", "id"))
    assert [r.model for r in runs] == ["", "m-1"]
    assert all(r.usage == {} and r.status == "committed" for r in runs)


@pytest.mark.parametrize("who", ["viewer", "outsider", "stranger"])
def test_only_editors_fork(team: Team, who: str) -> None:
    _thread, path, _ = _branched(team.alpha)
    user: User = getattr(team, who)

    with pytest.raises(PermissionDenied):
        fork_thread(message=path[1], user=user)

    assert Thread.objects.count() == 1 and not AuditRecord.objects.filter(action="fork")


def test_a_hidden_thread_is_not_forked(team: Team) -> None:
    thread, path, _ = _branched(team.alpha)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)

    with pytest.raises(Conflict):
        fork_thread(message=path[1], user=team.owner)

    assert Thread.objects.count() == 1


def test_a_redacted_message_is_copied_redacted(team: Team) -> None:
    thread = make_thread("Secrets", project=team.alpha)
    secret = last_message(ask(thread, "my password is hunter2"))
    answer = last_message(say(thread, "noted"))
    moderation.redact_message(user=team.owner, message=secret, reason="pii")

    fork = fork_thread(message=answer, user=team.editor)

    copy = Message.objects.get(thread=fork, depth=0)
    assert copy.redacted_at is not None
    assert "hunter2" not in str(copy.parts) + str(copy.metadata)
    assert "hunter2" not in str(list(fork.runs.values_list("events__data", flat=True)))
    check_all([fork])


def test_a_fork_of_a_fork_says_where_it_starts_once(team: Team) -> None:
    _thread, path, _ = _branched(team.alpha)
    first = fork_thread(message=path[3], user=team.editor)

    second = fork_thread(message=list(selectors.active_path(first))[1], user=team.editor)

    assert second.title == "Capitals (from message 2)"
    assert second.parent_thread_id == first.id
    assert second.metadata["forkedFrom"]["title"] == "Capitals (from message 4)"


def test_an_untitled_thread_forks_as_untitled(team: Team) -> None:
    thread = make_thread("", project=team.alpha)
    prompt = last_message(ask(thread, "hi"))

    assert fork_thread(message=prompt, user=team.editor).title == "Untitled thread (from message 1)"


def test_a_locked_thread_forks_into_an_unlocked_one(team: Team) -> None:
    _thread, path, _ = _branched(team.alpha)
    Thread.objects.filter(pk=path[0].thread_id).update(locked=True)

    fork = fork_thread(message=path[1], user=team.editor)

    assert not fork.locked and Thread.objects.get(pk=path[0].thread_id).locked
