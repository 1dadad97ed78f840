"""Datasets from judgement (issue 28): sft paths kept by their last answer's score and feedback,
preference pairs from sibling answers whose scores differ, over the API and on the page, and
bad values refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import ApiClient
from tests.base import Team
from tests.datasets.conftest import Regenerated, answer
from tests.factories import ask, last_message, make_thread
from transcripts import datasets
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ScoreSpec, Target
from transcripts.models import Message, Project, Run, Thread

pytestmark = pytest.mark.django_db

EVALUATOR = Author(token_id=None, token_name="evaluator")


def export(project: Project, kind: str, **values: str) -> list[dict[str, Any]]:
    query = datasets.parse_query(kind, values)
    return [json.loads(line) for line in datasets.jsonl_lines(project, query)]


def _score(target: Target, value: float, name: str = "helpfulness") -> None:
    scores.add_score(target=target, author=EVALUATOR, spec=ScoreSpec(name=name, value=value))


def _first(run: Run) -> Message:
    return Message.objects.filter(run=run).order_by("id").first()  # type: ignore[return-value]


def _chat(team: Team, title: str) -> tuple[Thread, Message]:
    thread = make_thread(title, project=team.alpha)
    ask(thread, f"{title}?")
    return thread, last_message(answer(thread, f"{title}!"))


@pytest.fixture
def chats(team: Team) -> dict[str, Message]:
    """Four one-turn chats: good (4 and 5: 4.5, 👍👍👎), fair (3, 👍), poor (2, 👎), none."""
    good_thread, good = _chat(team, "good")
    _score(Target(good_thread, message=good), 4)
    _score(Target(good_thread, message=good), 5)
    for user in (team.viewer, team.editor):
        scores.give_feedback(user=user, message=good, up=True)
    scores.give_feedback(user=team.owner, message=good, up=False)
    fair_thread, fair = _chat(team, "fair")
    _score(Target(fair_thread, message=fair), 3)
    scores.give_feedback(user=team.viewer, message=fair, up=True)
    poor_thread, poor = _chat(team, "poor")
    _score(Target(poor_thread, message=poor), 2)
    scores.give_feedback(user=team.viewer, message=poor, up=False)
    _chat(team, "none")
    return {"good": good, "fair": fair, "poor": poor}


def _answers(rows: list[dict[str, Any]]) -> set[str]:
    return {row["messages"][-1]["content"] for row in rows}


def test_sft_keeps_paths_whose_last_answer_reaches_min_score(
    team: Team, chats: dict[str, Message]
) -> None:
    assert _answers(export(team.alpha, "sft")) == {"good!", "fair!", "poor!", "none!"}
    assert _answers(export(team.alpha, "sft", minScore="helpfulness:4")) == {"good!"}
    assert _answers(export(team.alpha, "sft", minScore="helpfulness:3")) == {"good!", "fair!"}
    assert export(team.alpha, "sft", minScore="accuracy:0") == []


def test_sft_feedback_up_keeps_answers_with_more_ups_than_downs(
    team: Team, chats: dict[str, Message]
) -> None:
    assert _answers(export(team.alpha, "sft", feedback="up")) == {"good!", "fair!"}
    both = export(team.alpha, "sft", minScore="helpfulness:4", feedback="up")
    assert len(both) == 1 and both[0]["messages"] == [
        {"role": "user", "content": "good?"},
        {"role": "assistant", "content": "good!"},
    ]


def test_a_score_on_an_earlier_answer_does_not_pass_the_path(team: Team) -> None:
    thread, first = _chat(team, "two turns")
    _score(Target(thread, message=first), 5)
    ask(thread, "more?")
    answer(thread, "more!")

    assert export(team.alpha, "sft", minScore="helpfulness:4") == []
    summary = datasets.summarize(
        team.alpha, datasets.parse_query("sft", {"minScore": "helpfulness:4"})
    )
    assert summary.skipped == {"last answer below minScore": 1}


def test_preference_pairs_from_scores_choose_the_higher(
    team: Team, regenerated: Regenerated
) -> None:
    r = regenerated
    thread = r.thread
    _score(Target(thread, message=_first(r.first)), 2)
    _score(Target(thread, message=_first(r.first)), 4)  # first: 3 on average
    _score(Target(thread, run=r.second), 5)  # second's run: 5
    _score(Target(thread, message=_first(r.third)), 3)  # third: 3, as first: no pair

    rows = export(team.alpha, "preferences", **{"from": "scores", "name": "helpfulness"})

    pairs = {(row["metadata"]["chosenRunId"], row["metadata"]["rejectedRunId"]) for row in rows}
    assert pairs == {(r.second.id, r.first.id), (r.second.id, r.third.id)}
    assert {row["metadata"]["chosenBy"] for row in rows} == {"score"}
    assert rows[0]["chosen"] == [{"role": "assistant", "content": "Four."}]
    # Today's pairs from the Prefer mark are unchanged beside them.
    rated = export(team.alpha, "preferences")
    assert {row["metadata"]["chosenBy"] for row in rated} == {"rating"} and len(rated) == 2


def test_no_pairs_when_scores_do_not_differ(team: Team, regenerated: Regenerated) -> None:
    r = regenerated
    for run in (r.first, r.second):
        _score(Target(r.thread, message=_first(run)), 4)

    assert export(team.alpha, "preferences", **{"from": "scores", "name": "helpfulness"}) == []


@pytest.mark.parametrize(
    ("kind", "values", "field"),
    [
        ("sft", {"minScore": "helpfulness"}, "minScore"),
        ("sft", {"minScore": "helpfulness:high"}, "minScore"),
        ("sft", {"minScore": ":4"}, "minScore"),
        ("sft", {"feedback": "down"}, "feedback"),
        ("preferences", {"from": "votes"}, "from"),
        ("preferences", {"from": "scores"}, "name"),
    ],
)
def test_bad_judgement_values_are_422s_naming_the_field(
    team: Team, kind: str, values: dict[str, str], field: str
) -> None:
    api = ApiClient(team.token(team.alpha, "read"))

    response = api.get(f"/datasets/{kind}", **values)

    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == field


def test_the_api_and_the_page_give_the_judged_datasets(
    team: Team, chats: dict[str, Message], regenerated: Regenerated
) -> None:
    api = ApiClient(team.token(team.alpha, "read"))
    _score(Target(regenerated.thread, message=_first(regenerated.first)), 1)
    _score(Target(regenerated.thread, message=_first(regenerated.third)), 5)

    sft = api.get("/datasets/sft", minScore="helpfulness:4", feedback="up")
    pairs = api.get("/datasets/preferences", **{"from": "scores", "name": "helpfulness"})

    assert sft.status_code == 200 and pairs.status_code == 200
    sft_rows = [json.loads(line) for line in b"".join(sft.streaming_content).splitlines()]
    assert [row["messages"][-1]["content"] for row in sft_rows] == ["good!"]
    pair_rows = [json.loads(line) for line in b"".join(pairs.streaming_content).splitlines()]
    assert [row["metadata"]["chosenRunId"] for row in pair_rows] == [regenerated.third.id]
    page = team.client(team.viewer).get(
        "/p/alpha/datasets/", {"kind": "sft", "minScore": "helpfulness:4", "feedback": "up"}
    )
    text = page.content.decode()
    assert page.status_code == 200 and 'name="minScore"' in text and 'name="from"' in text
    assert "<strong>1</strong> row" in text and "last answer below minScore" in text
    assert "minScore=helpfulness%3A4" in text and "feedback=up" in text  # the download link


def test_who_gets_the_judged_datasets(
    team: Team, chats: dict[str, Message], regenerated: Regenerated
) -> None:
    judged = {"minScore": "helpfulness:1", "feedback": "up"}
    pairs = {"from": "scores", "name": "helpfulness"}
    outsider = ApiClient(team.token(team.beta, "read", "admin"))
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))

    assert outsider.get("/datasets/sft", project="alpha", **judged).status_code == 404
    assert outsider.get("/datasets/preferences", project="alpha", **pairs).status_code == 404
    assert ingest_only.get("/datasets/sft", **judged).status_code == 403
    assert ingest_only.get("/datasets/preferences", **pairs).status_code == 403
    page = team.client(team.outsider).get("/p/alpha/datasets/", {"kind": "sft", **judged})
    assert page.status_code == 404
