"""Scores posted at once (issue 28): evaluators re-sending one externalId in parallel get one
score, each call answered (no error), and one person's parallel feedback stays one row."""

from __future__ import annotations

import pytest

from tests.base import make_user
from tests.factories import ask, last_message, make_thread, say
from tests.ledger.test_concurrency import in_threads
from transcripts.ledger import scores
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.scores import Author, ScoreSpec, Target
from transcripts.models import Feedback, Score

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_external_id_sent_in_parallel_is_one_score() -> None:
    thread = make_thread()
    ask(thread, "Which way?")
    answer = last_message(say(thread, "Left."))

    def post(n: int) -> bool:
        return scores.add_score(
            target=Target(thread, message=answer),
            author=Author(token_name="evaluator"),
            spec=ScoreSpec("helpfulness", float(n), external_id="eval-1"),
        )[1]

    created = in_threads(6, post)
    assert created.count(True) == 1
    assert Score.objects.count() == 1


def test_one_persons_parallel_feedback_is_one_row() -> None:
    thread = make_thread()
    ask(thread, "Which way?")
    answer = last_message(say(thread, "Right."))
    viewer = make_user("parallel-viewer")
    set_member(project=default_project(), user=viewer, role="viewer")
    in_threads(6, lambda n: scores.give_feedback(user=viewer, message=answer, up=n % 2 == 0))
    assert Feedback.objects.count() == 1
