"""Scores on the run page and in Compare (issue 28): the run page lists the run's scores and its
messages' with source and author; each Compare branch shows its own scores and feedback counts,
never a sibling's; an outsider gets a 404."""

from __future__ import annotations

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ScoreSpec, Target
from transcripts.models import Message, Run, Thread

pytestmark = pytest.mark.django_db

BOT = Author(token_name="grader")


def _forked(team: Team) -> tuple[Thread, Message, Run, Run]:
    """A prompt with two answers: first (superseded) and second (active)."""
    thread = make_thread("Forked", project=team.alpha)
    prompt = last_message(ask(thread, "Capital of France?"))
    first = say(thread, "Lyon.")
    second = say(thread, "Paris.", fork_from=prompt.id)
    return thread, prompt, first, second


def _judge(team: Team, thread: Thread, first: Run, second: Run) -> None:
    wrong, right = last_message(first), last_message(second)
    scores.add_score(
        target=Target(thread, message=wrong),
        author=BOT,
        spec=ScoreSpec(name="accuracy", value=0, comment="wrong city", source="evaluator"),
    )
    scores.add_score(
        target=Target(thread, message=right),
        author=Author(user=team.editor),
        spec=ScoreSpec(name="accuracy", value=1, source="person"),
    )
    scores.add_score(
        target=Target(thread, run=second), author=BOT, spec=ScoreSpec(name="policy", label="pass")
    )
    scores.give_feedback(user=team.viewer, message=right, up=True)
    scores.give_feedback(user=team.editor, message=right, up=True)
    scores.give_feedback(user=team.viewer, message=wrong, up=False)


def test_the_run_page_lists_its_scores_with_source_and_author(team: Team) -> None:
    thread, _, first, second = _forked(team)
    _judge(team, thread, first, second)

    page = team.client(team.viewer).get(f"/runs/{second.id}/").content.decode()
    other = team.client(team.viewer).get(f"/runs/{first.id}/").content.decode()

    section = page.split('id="run-scores-heading"')[1].split("</section>")[0]
    assert section.count('class="score-line"') == 2
    assert 'accuracy</span> <strong class="score-value">1</strong>' in section
    assert "on the assistant message" in section and "by editor" in section
    assert 'policy</span> <strong class="score-value">pass</strong>' in section
    assert "on the run" in section and ">API<" in section
    other_section = other.split('id="run-scores-heading"')[1].split("</section>")[0]
    assert other_section.count('class="score-line"') == 1
    assert "wrong city" in other_section and ">evaluator<" in other_section
    assert "by a deleted token" in other_section  # no token row: named as such


def test_a_run_without_scores_says_so(team: Team) -> None:
    _, _, first, _ = _forked(team)

    page = team.client(team.viewer).get(f"/runs/{first.id}/").content.decode()

    assert "No score on this run or its messages yet." in page


def test_compare_shows_each_branch_its_own_scores_and_feedback(team: Team) -> None:
    thread, prompt, first, second = _forked(team)
    _judge(team, thread, first, second)

    response = team.client(team.viewer).get(f"/t/{thread.id}/fork/{prompt.id}/compare/")

    assert response.status_code == 200
    by_run = {c.run.id: c for c in response.context["columns"]}
    right, wrong = by_run[second.id], by_run[first.id]
    assert (right.judgement.up, right.judgement.down) == (2, 0)
    assert (wrong.judgement.up, wrong.judgement.down) == (0, 1)
    assert sorted((s.name, s.shown_value) for s in right.judgement.scores) == [
        ("accuracy", "1"),
        ("policy", "pass"),
    ]
    assert [(s.name, s.comment) for s in wrong.judgement.scores] == [("accuracy", "wrong city")]
    page = response.content.decode()
    assert "Feedback: 2 up, 0 down" in page and "Feedback: 0 up, 1 down" in page
    assert "wrong city" in page


def test_an_outsider_gets_a_404_on_the_scored_run(team: Team) -> None:
    thread, prompt, first, second = _forked(team)
    _judge(team, thread, first, second)
    outsider = team.client(team.outsider)

    assert outsider.get(f"/runs/{second.id}/").status_code == 404
    assert outsider.get(f"/t/{thread.id}/fork/{prompt.id}/compare/").status_code == 404
