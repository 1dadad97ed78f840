"""The thread list by judgement (issue 28): `score:` filters on any score of a thread,
`feedback:up|down`, `unscored`, the Score column and its sort, the same words in the API's
list, and malformed words refused with a 4xx."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient
from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.models import Message, Thread

pytestmark = pytest.mark.django_db

EVALUATOR = Author(token_id=None, token_name="evaluator")


def _answered(team: Team, title: str) -> tuple[Thread, Message]:
    thread = make_thread(title, project=team.alpha)
    ask(thread, "Question?")
    return thread, last_message(say(thread, "Answer."))


def _score(target: Target, name: str, value: float | None = None, label: str = "") -> None:
    scores.add_score(
        target=target, author=EVALUATOR, spec=ScoreSpec(name=name, value=value, label=label)
    )


@pytest.fixture
def judged(team: Team) -> dict[str, Thread]:
    """Four threads: low (a message scored 2 and a 👎), high (the thread scored 5, policy pass,
    a 👍), run (its run scored 1) and bare (nothing)."""
    low, low_answer = _answered(team, "low")
    _score(Target(low, message=low_answer), "helpfulness", 2)
    scores.give_feedback(user=team.viewer, message=low_answer, up=False)
    high, high_answer = _answered(team, "high")
    _score(Target(high), "helpfulness", 5)
    _score(Target(high), "policy", label="pass")
    scores.give_feedback(user=team.editor, message=high_answer, up=True)
    run, run_answer = _answered(team, "run")
    assert run_answer.run is not None
    _score(Target(run, run=run_answer.run), "helpfulness", 1)
    bare, _ = _answered(team, "bare")
    return {"low": low, "high": high, "run": run, "bare": bare}


def _titles(team: Team, **params: str) -> list[str]:
    """The titles the thread list shows the viewer, in order."""
    page = team.client(team.viewer).get("/", params).content.decode()
    threads = Thread.objects.filter(project__slug="alpha")
    return sorted(
        (t.title for t in threads if f'href="/t/{t.id}/"' in page),
        key=lambda title: page.index(f">{title}<"),
    )


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("score:helpfulness<3", {"low", "run"}),
        ("score:helpfulness<=2", {"low", "run"}),
        ("score:helpfulness>2", {"high"}),
        ("score:helpfulness>=5", {"high"}),
        ("score:helpfulness=1", {"run"}),
        ("score:policy=pass", {"high"}),
        ("score:policy=fail", set()),
        ("feedback:down", {"low"}),
        ("FEEDBACK:UP", {"high"}),
        ("unscored", {"bare"}),
        ("score:helpfulness<3 feedback:down", {"low"}),
    ],
)
def test_the_list_keeps_threads_any_of_whose_scores_match(
    team: Team, judged: dict[str, Thread], q: str, expected: set[str]
) -> None:
    assert set(_titles(team, q=q)) == expected


def test_judgement_words_combine_with_the_search(team: Team, judged: dict[str, Thread]) -> None:
    assert _titles(team, q="score:helpfulness<3 low") == ["low"]


@pytest.mark.parametrize(
    "q", ["score:helpfulness", "score:helpfulness<bad", "score:<3", "score:helpfulness<inf"]
)
def test_a_malformed_score_word_is_a_400_naming_the_search(
    team: Team, judged: dict[str, Thread], q: str
) -> None:
    response = team.client(team.viewer).get("/", {"q": q})

    assert response.status_code == 400
    page = response.content.decode()
    assert "Search:" in page
    assert "is not a score filter" in page or "needs a number" in page
    assert "thread-row" not in page


def test_the_score_column_shows_averages_and_sorts(team: Team, judged: dict[str, Thread]) -> None:
    _score(Target(judged["low"]), "helpfulness", 3)  # low: (2 + 3) / 2
    page = team.client(team.viewer).get("/", {"scoreColumn": "helpfulness"}).content.decode()

    assert "Score: helpfulness" in page
    assert 'title="Average of 2 scores named helpfulness on this thread">2.5<' in page
    assert "No helpfulness score on this thread" in page  # bare
    assert _titles(team, scoreColumn="helpfulness", sort="score") == ["high", "low", "run", "bare"]
    assert _titles(team, scoreColumn="helpfulness", sort="score_asc") == [
        "run",
        "low",
        "high",
        "bare",
    ]


def test_the_score_sort_pages_with_a_cursor(team: Team) -> None:
    for i in range(30):
        thread, _ = _answered(team, f"extra {i:02}")
        _score(Target(thread), "helpfulness", i / 10)
    client = team.client(team.viewer)
    params: dict[str, Any] = {"scoreColumn": "helpfulness", "sort": "score"}

    first = client.get("/", params).content.decode()
    cursor = first.split("cursor=")[1].split('"')[0].split("&")[0]
    second = client.get("/", {**params, "cursor": cursor})

    assert second.status_code == 200
    page = second.content.decode()
    shown = {t.title for t in Thread.objects.all() if f'href="/t/{t.id}/"' in page}
    assert shown == {"extra 04", "extra 03", "extra 02", "extra 01", "extra 00"}
    assert client.get("/", {**params, "cursor": "bm90IGEgY3Vyc29y"}).status_code == 400


def test_the_first_numeric_config_is_the_default_column(team: Team) -> None:
    scores.create_score_config(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=ConfigSpec(name="accuracy", data_type="numeric", min_value=0, max_value=1),
    )
    make_thread("any", project=team.alpha)

    page = team.client(team.viewer).get("/").content.decode()

    assert "Score: accuracy" in page and '<option value="accuracy" selected>' in page


def test_sorting_by_score_without_a_score_is_a_400(team: Team) -> None:
    make_thread("any", project=team.alpha)

    response = team.client(team.viewer).get("/", {"sort": "score"})

    assert response.status_code == 400
    assert "no score to sort by" in response.content.decode()


def test_the_api_list_takes_the_same_words(team: Team, judged: dict[str, Thread]) -> None:
    api = ApiClient(team.token(team.alpha, "read"))

    def titles(q: str) -> set[str]:
        response = api.get("/threads", q=q)
        assert response.status_code == 200, response.content
        return {t["title"] for t in response.json()["threads"]}

    assert titles("score:helpfulness<3") == {"low", "run"}
    assert titles("feedback:down") == {"low"}
    assert titles("unscored") == {"bare"}
    refused = api.get("/threads", q="score:helpfulness<oops")
    assert refused.status_code == 422
    assert refused.json()["error"]["details"]["field"] == "q"


def test_no_one_finds_another_projects_threads_by_score(
    team: Team, judged: dict[str, Thread]
) -> None:
    beta = ApiClient(team.token(team.beta, "read", "admin"))
    listed = beta.get("/threads", q="score:helpfulness<3")
    page = team.client(team.outsider).get("/", {"q": "feedback:down"}).content.decode()

    assert listed.status_code == 200 and listed.json()["threads"] == []
    assert not any(f'href="/t/{t.id}/"' in page for t in judged.values())


def test_the_column_offers_the_scores_that_average(team: Team) -> None:
    owner = Author(user=team.owner)
    for spec in (
        ConfigSpec(name="accuracy", data_type="numeric"),
        ConfigSpec(name="safe", data_type="boolean"),
        ConfigSpec(name="policy", data_type="categorical", labels=("pass", "fail")),
    ):
        scores.create_score_config(project=team.alpha, author=owner, spec=spec)
    make_thread("any", project=team.alpha)

    page = team.client(team.viewer).get("/").content.decode()

    offered = page.split('name="scoreColumn"')[1].split("</select>")[0]
    assert '"accuracy"' in offered and '"safe"' in offered and '"policy"' not in offered
