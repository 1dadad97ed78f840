"""The dashboard's score averages (issue 28): per config and bucket, on known scores; hidden
threads count only for those who may see them; the page draws one chart per config."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.base import Team
from tests.factories import make_thread
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.models import Score, Thread
from transcripts.selectors.score_stats import score_averages
from transcripts.selectors.stats import Window

pytestmark = pytest.mark.django_db

DAY1 = datetime(2026, 3, 2, tzinfo=UTC)
WEEK = Window(DAY1 - timedelta(days=3), DAY1 + timedelta(days=4))
BOT = Author(token_name="grader")


def _config(team: Team, name: str, data_type: str = "numeric", **spec: object) -> None:
    scores.create_score_config(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=ConfigSpec(name=name, data_type=data_type, **spec),  # type: ignore[arg-type]
    )


def _score_at(thread: Thread, name: str, value: float, at: datetime) -> None:
    score, _ = scores.add_score(
        target=Target(thread), author=BOT, spec=ScoreSpec(name=name, value=value)
    )
    Score.objects.filter(pk=score.pk).update(created_at=at)


@pytest.fixture
def scored(team: Team) -> Thread:
    _config(team, "helpfulness", min_value=1, max_value=5)
    _config(team, "safe", "boolean")
    _config(team, "policy", "categorical", labels=("pass", "fail"))
    thread = make_thread("scored", project=team.alpha)
    hidden = make_thread("hidden", project=team.alpha)
    Thread.objects.filter(pk=hidden.pk).update(hidden=True)
    for value, at in ((2, DAY1), (4, DAY1 + timedelta(hours=5)), (5, DAY1 + timedelta(days=1))):
        _score_at(thread, "helpfulness", value, at)
    _score_at(hidden, "helpfulness", 1, DAY1)
    _score_at(thread, "safe", 1, DAY1)
    _score_at(thread, "helpfulness", 1, DAY1 - timedelta(days=30))  # outside the window
    return thread


def test_averages_per_day_for_each_numeric_and_boolean_config(team: Team, scored: Thread) -> None:
    series = {s.name: s for s in score_averages(team.alpha.pk, WEEK, include_hidden=False)}

    assert set(series) == {"helpfulness", "safe"}  # a categorical config has no average
    assert series["helpfulness"].points == {DAY1: (3.0, 2), DAY1 + timedelta(days=1): (5.0, 1)}
    assert (series["safe"].low, series["safe"].high) == (0.0, 1.0)
    hidden_too = score_averages(team.alpha.pk, WEEK, include_hidden=True)
    assert {s.name: s for s in hidden_too}["helpfulness"].points[DAY1] == (7 / 3, 3)


def test_the_dashboard_draws_a_chart_per_config(team: Team, scored: Thread) -> None:
    page = team.client(team.viewer).get(
        "/p/alpha/dashboard/", {"window": "custom", "from": "2026-02-27", "to": "2026-03-05"}
    )

    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="chart-score-helpfulness"' in text and 'id="chart-score-safe"' in text
    assert "average 3.67 of 3 scores" in text  # (2 + 4 + 5) / 3, the hidden one left out
    assert "Mar 2: average 3 of 2" in text
    assert "scoreColumn=helpfulness" in text
    outsider = team.client(team.outsider).get("/p/alpha/dashboard/")
    assert outsider.status_code == 404


def test_no_config_no_score_chart(team: Team) -> None:
    page = team.client(team.viewer).get("/p/alpha/dashboard/").content.decode()

    assert "chart-score-" not in page
