"""Judgement under moderation (issue 28): redacting a message keeps its scores but erases the
comments of its scores and feedback (free text that may quote it); redacting a run erases its
scores' comments; retention deletes scores and feedback with their thread."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread, say
from transcripts import ledger
from transcripts.ledger import moderation, scores
from transcripts.ledger.projects import set_retention
from transcripts.ledger.retention import purge_expired
from transcripts.ledger.scores import Author, ScoreSpec, Target
from transcripts.models import AuditRecord, Feedback, Message, RunStatus, Score, Thread

pytestmark = pytest.mark.django_db

BOT = Author(token_name="evaluator")


def _judged_answer(team: Team, title: str = "Judged") -> Message:
    thread = make_thread(title, project=team.alpha)
    ask(thread, "My card is 4111?")
    answer = last_message(say(thread, "Your card 4111 is noted."))
    for target, comment in ((Target(thread, message=answer), "quotes 4111"), (Target(thread), "")):
        scores.add_score(
            target=target, author=BOT, spec=ScoreSpec(name="helpfulness", value=2, comment=comment)
        )
    scores.give_feedback(user=team.viewer, message=answer, up=False, comment="it said 4111")
    return answer


def test_redacting_a_message_keeps_its_scores_and_erases_their_comments(team: Team) -> None:
    answer = _judged_answer(team)
    other = _judged_answer(team, "Untouched")

    moderation.redact_message(user=team.owner, message=answer, reason="pii")

    kept = Score.objects.get(message=answer)
    assert (kept.value, kept.name, kept.comment) == (2.0, "helpfulness", "")
    feedback = Feedback.objects.get(message=answer)
    assert (feedback.up, feedback.comment) == (False, "")
    # The thread's own score and another thread's comments are not the message's.
    assert Score.objects.filter(thread=answer.thread, message=None).get().value == 2.0
    assert Score.objects.get(message=other).comment == "quotes 4111"
    assert Feedback.objects.get(message=other).comment == "it said 4111"
    audit = AuditRecord.objects.get(action="redact", target_id=answer.id)
    assert audit.details["erasedComments"] == 2


def test_redacting_a_failed_run_erases_its_scores_comments(team: Team) -> None:
    thread = make_thread("Failed", project=team.alpha)
    ask(thread, "hi")
    run = make_run(thread, ("text-delta", {"delta": "partial 4111"}), commit=False)
    run = ledger.fail_run(run=run, error={"message": "boom"})
    assert run.status == RunStatus.FAILED
    scores.add_score(
        target=Target(thread, run=run),
        author=BOT,
        spec=ScoreSpec(name="x", value=1, comment="4111"),
    )

    moderation.redact_run(user=team.owner, run=run, reason="pii")

    assert Score.objects.get(run=run).comment == ""


def test_retention_deletes_scores_and_feedback_with_their_thread(team: Team) -> None:
    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    old = _judged_answer(team, "old")
    recent = _judged_answer(team, "recent")
    Thread.objects.filter(pk=old.thread_id).update(updated_at=now - timedelta(days=31))
    Thread.objects.filter(pk=recent.thread_id).update(updated_at=now - timedelta(days=2))
    set_retention(project=team.alpha, days=30)

    purge_expired(now=now)

    assert not Score.objects.filter(thread_id=old.thread_id).exists()
    assert not Feedback.objects.filter(thread_id=old.thread_id).exists()
    assert Score.objects.filter(thread_id=recent.thread_id).count() == 2
    assert Feedback.objects.filter(thread_id=recent.thread_id).count() == 1
