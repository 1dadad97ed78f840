"""Feedback and scores on the pages (issue 28): the thumbs on every answer (plain forms and
htmx), counts, comments kept by the thumbs, refusals that store nothing, a message's scores,
nothing of it on a shared page, and the project's score configs page."""

from __future__ import annotations

import re

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.ledger.shares import create_share
from transcripts.models import Feedback, Message, Project, ScoreConfig

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def _answer(team: Team) -> Message:
    thread = make_thread("Weather", project=team.alpha)
    ask(thread, "Will it rain?")
    return last_message(say(thread, "Probably not."))


def _url(answer: Message) -> str:
    return f"/t/{answer.thread_id}/m/{answer.id}/feedback/"


def _pressed(html: str) -> dict[str, str]:
    """The thumbs' aria-pressed, by class."""
    return dict(re.findall(r'class="fb-btn fb-(up|down)" aria-pressed="(true|false)"', html))


def test_a_viewer_gives_changes_and_takes_back_feedback_without_javascript(team: Team) -> None:
    answer = _answer(team)
    viewer = team.client(team.viewer)
    response = viewer.post(_url(answer), {"rating": "up"})
    assert response.status_code == 303
    assert response["Location"] == f"/t/{answer.thread_id}/?leaf={answer.id}#m-{answer.id}"
    page = viewer.get(f"/t/{answer.thread_id}/").content.decode()
    assert _pressed(page) == {"up": "true", "down": "false"}
    # Pressed again, the button takes the feedback back.
    assert 'name="rating" value="none" class="fb-btn fb-up"' in page
    assert "Saved: helpful." in page

    viewer.post(_url(answer), {"rating": "down", "comment": "Ignores the forecast"})
    viewer.post(_url(answer), {"rating": "up"})  # the thumbs keep the comment
    mine = Feedback.objects.get()
    assert (mine.up, mine.comment) == (True, "Ignores the forecast")
    viewer.post(_url(answer), {"rating": "none"})
    assert not Feedback.objects.exists()


def test_the_htmx_answer_is_the_feedback_part_with_counts(team: Team) -> None:
    answer = _answer(team)
    team.client(team.editor).post(_url(answer), {"rating": "down"})
    response = team.client(team.viewer).post(_url(answer), {"rating": "up"}, headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith(f'<div class="msg-feedback" id="fb-{answer.id}">')
    assert _pressed(html) == {"up": "true", "down": "false"}
    counts = re.findall(r'<span class="fb-count">(\d+)</span>', html)
    assert counts == ["1", "1"]
    assert "Saved: helpful." in html


@pytest.mark.parametrize(
    ("data", "on_question"),
    [({"rating": "sideways"}, False), ({"rating": "up", "comment": "x" * 2001}, False),
     ({"rating": "up"}, True)],
    ids=["unknown rating", "long comment", "a question"],
)  # fmt: skip
def test_bad_feedback_is_a_422_that_stores_nothing(
    team: Team, data: dict[str, str], on_question: bool
) -> None:
    answer = _answer(team)
    target = answer.parent if on_question else answer
    assert target is not None
    response = team.client(team.viewer).post(_url(target), data)
    assert response.status_code == 422
    assert not Feedback.objects.exists()


def test_answers_carry_the_thumbs_every_message_its_scores_and_a_share_none(team: Team) -> None:
    answer = _answer(team)
    question = answer.parent
    assert question is not None
    api = Author(token_name="evaluator")
    thread = answer.thread
    scores.add_score(target=Target(thread, message=answer), author=api,
                     spec=ScoreSpec("helpfulness", 4, source="evaluator"))  # fmt: skip
    scores.add_score(target=Target(thread, message=question), author=api,
                     spec=ScoreSpec("clarity", label="clear"))  # fmt: skip
    scores.give_feedback(user=team.editor, message=answer, up=True)
    page = team.client(team.viewer).get(f"/t/{thread.id}/").content.decode()
    assert page.count('class="msg-feedback"') == 1 and f'id="fb-{answer.id}"' in page
    assert re.findall(r'<span class="fb-count">(\d+)</span>', page) == ["1", "0"]
    chips = re.findall(r'score-name">([^<]+)</span> <strong class="score-value">([^<]+)<', page)
    assert sorted(chips) == [("clarity", "clear"), ("helpfulness", "4")]
    assert "evaluator</span>" in page

    _, secret = create_share(thread=thread, user=team.editor)
    shared = team.client(team.viewer).get(f"/s/{secret}/").content.decode()
    assert "Probably not." in shared
    assert "fb-" not in shared and "score-chip" not in shared


def test_the_scores_page_lists_configs_and_offers_forms_to_admins_only(team: Team) -> None:
    scores.create_score_config(project=team.alpha, author=Author(user=team.owner),
                               spec=ConfigSpec("helpfulness", "numeric", 1, 5))  # fmt: skip
    viewer_page = team.client(team.viewer).get("/p/alpha/scores/").content.decode()
    assert "helpfulness" in viewer_page and "numeric, 1 to 5" in viewer_page
    assert "Add score config" not in viewer_page and "Archive" not in viewer_page
    owner = team.client(team.owner)
    assert "Add score config" in owner.get("/p/alpha/scores/").content.decode()

    verdict_form = {"name": "verdict", "data_type": "categorical", "labels": "pass, fail",
                    "writers": "api"}  # fmt: skip
    created = owner.post("/p/alpha/scores/", verdict_form)
    assert created.status_code == 303
    verdict = ScoreConfig.objects.get(name="verdict")
    assert (verdict.label_list, verdict.writers) == (["pass", "fail"], "api")
    owner.post(f"/p/alpha/scores/{verdict.pk}/archive/")
    verdict.refresh_from_db()
    assert verdict.archived_at is not None
    page = owner.get("/p/alpha/scores/").content.decode()
    assert "categorical: pass, fail" in page and "archived" in page
    owner.post("/p/alpha/scores/required/", {"required": "on"})
    assert Project.objects.get(slug="alpha").settings["scoresNeedConfig"] is True


@pytest.mark.parametrize(
    "data",
    [
        {"name": "helpfulness", "data_type": "numeric", "writers": "both"},
        {"name": "x", "data_type": "numeric", "min_value": "5", "max_value": "1",
         "writers": "both"},
        {"name": "x", "data_type": "categorical", "labels": "", "writers": "both"},
        {"name": "x", "data_type": "ordinal", "writers": "both"},
    ],
    ids=["taken name", "min above max", "no labels", "unknown type"],
)  # fmt: skip
def test_a_bad_config_is_refused_on_the_page_and_stores_nothing(
    team: Team, data: dict[str, str]
) -> None:
    scores.create_score_config(project=team.alpha, author=Author(user=team.owner),
                               spec=ConfigSpec("helpfulness", "boolean"))  # fmt: skip
    response = team.client(team.owner).post("/p/alpha/scores/", data)
    assert response.status_code in (409, 422)
    assert 'class="flash-error card" role="alert"' in response.content.decode()
    assert ScoreConfig.objects.count() == 1


def test_another_projects_config_cannot_be_archived(team: Team) -> None:
    config = scores.create_score_config(project=team.beta, author=Author(),
                                        spec=ConfigSpec("x", "boolean"))  # fmt: skip
    response = team.client(team.owner).post(f"/p/alpha/scores/{config.pk}/archive/")
    assert response.status_code == 404
    config.refresh_from_db()
    assert config.archived_at is None
