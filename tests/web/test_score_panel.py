"""The score panel beside an answer (issue 28): editors and up score an answer with the
project's configs people may write (plain forms and htmx), one score per person, config and
answer (a new one replaces theirs), removable; refusals store nothing; viewers, other people's
scores and shared pages see no panel."""

from __future__ import annotations

import re

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.errors import PermissionDenied
from transcripts.ledger import scores
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.ledger.shares import create_share
from transcripts.models import AuditRecord, Message, Score, ScoreConfig

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def _answer(team: Team) -> Message:
    thread = make_thread("Weather", project=team.alpha)
    ask(thread, "Will it rain?")
    return last_message(say(thread, "Probably not."))


def _config(
    team: Team,
    name: str,
    kind: str,
    *,
    writers: str = "both",
    min_value: float | None = None,
    max_value: float | None = None,
    labels: tuple[str, ...] = (),
) -> ScoreConfig:
    spec = ConfigSpec(name, kind, min_value, max_value, labels, writers=writers)
    return scores.create_score_config(project=team.alpha, author=Author(user=team.owner), spec=spec)


def _url(answer: Message) -> str:
    return f"/t/{answer.thread_id}/m/{answer.id}/score/"


def _mine(answer: Message) -> list[tuple[str, float | None, str, str]]:
    rows = Score.objects.filter(message=answer).order_by("name")
    return list(rows.values_list("name", "value", "label", "comment"))


def test_an_editor_scores_replaces_and_removes_without_javascript(team: Team) -> None:
    answer = _answer(team)
    helpfulness = _config(team, "helpfulness", "numeric", min_value=1, max_value=5)
    editor = team.client(team.editor)
    response = editor.post(_url(answer), {"config": helpfulness.pk, "value": "4", "comment": "ok"})
    assert response.status_code == 303
    assert response["Location"] == f"/t/{answer.thread_id}/?leaf={answer.id}#m-{answer.id}"
    assert _mine(answer) == [("helpfulness", 4.0, "", "ok")]
    page = editor.get(response["Location"]).content.decode()
    assert "Saved: helpfulness 4." in page
    chips = re.findall(r'score-name">([^<]+)</span> <strong class="score-value">([^<]+)<', page)
    assert chips == [("helpfulness", "4")]
    assert 'name="value" step="any" required min="1" max="5" value="4"' in page

    # Again: the editor's score is replaced, not added; another person's stays beside it.
    scores.set_person_score(user=team.owner, message=answer, spec=ScoreSpec("helpfulness", 2))
    editor.post(_url(answer), {"config": helpfulness.pk, "value": "5"})
    assert sorted(Score.objects.values_list("author__username", "value")) == [
        (team.editor.username, 5.0), (team.owner.username, 2.0)
    ]  # fmt: skip
    audited = AuditRecord.objects.filter(action__endswith="_score")
    assert list(audited.values_list("action", flat=True)).count("replace_score") == 1

    editor.post(_url(answer), {"config": helpfulness.pk, "action": "remove"})
    assert list(Score.objects.values_list("author__username", flat=True)) == [team.owner.username]
    assert "delete_score" in AuditRecord.objects.values_list("action", flat=True)


def test_the_htmx_answer_is_the_scores_part_with_its_chips(team: Team) -> None:
    answer = _answer(team)
    verdict = _config(team, "verdict", "categorical", labels=("pass", "fail"))
    polite = _config(team, "polite", "boolean", writers="people")
    editor = team.client(team.editor)
    editor.post(_url(answer), {"config": verdict.pk, "value": "fail"}, headers=HTMX)
    response = editor.post(_url(answer), {"config": polite.pk, "value": "yes"}, headers=HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.strip().startswith(f'<div class="msg-judgement" id="sc-{answer.id}">')
    chips = re.findall(r'score-name">([^<]+)</span> <strong class="score-value">([^<]+)<', html)
    assert sorted(chips) == [("polite", "true"), ("verdict", "fail")]
    assert "Saved: polite yes." in html
    assert 'value="yes" required checked> Yes' in html
    assert 'value="fail" required checked> fail' in html
    assert html.count("Remove my") == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [({"value": "7"}, "value"), ({"value": "four"}, "value"), ({"value": ""}, "value"),
     ({"value": "nan"}, "value"), ({"value": "3", "comment": "x" * 2001}, "comment"),
     ({"config": "999999", "value": "3"}, "config"),
     ({"config": "api-only", "value": "3"}, "config"),
     ({"config": "other project", "value": "3"}, "config")],
    ids=["out of range", "not a number", "empty", "not finite", "long comment", "no such config",
         "written by the API only", "another project's"],
)  # fmt: skip
def test_a_bad_score_is_a_4xx_naming_the_field_that_stores_nothing(
    team: Team, data: dict[str, str], field: str
) -> None:
    answer = _answer(team)
    helpfulness = _config(team, "helpfulness", "numeric", min_value=1, max_value=5)
    api_only = _config(team, "latency", "numeric", writers="api")
    other = scores.create_score_config(project=team.beta, author=Author(),
                                       spec=ConfigSpec("beta", "numeric"))  # fmt: skip
    configs = {"api-only": api_only.pk, "other project": other.pk}
    form = {"config": str(helpfulness.pk), **data}
    form["config"] = str(configs.get(form["config"], form["config"]))
    scores.set_person_score(user=team.editor, message=answer, spec=ScoreSpec("helpfulness", 2))
    before = _mine(answer)
    response = team.client(team.editor).post(_url(answer), form, headers=HTMX)
    assert response.status_code == 422
    assert response["X-Refusal"] == "1"
    assert field in response.content.decode()
    assert _mine(answer) == before


def test_a_question_takes_no_score_here(team: Team) -> None:
    answer = _answer(team)
    question = answer.parent
    assert question is not None
    config = _config(team, "helpfulness", "numeric")
    response = team.client(team.editor).post(_url(question), {"config": config.pk, "value": "3"})
    assert response.status_code == 422
    assert not Score.objects.exists()


def test_the_panel_is_for_editors_and_up_on_answers_and_never_on_a_share(team: Team) -> None:
    answer = _answer(team)
    _config(team, "helpfulness", "numeric", min_value=1, max_value=5)
    _config(team, "latency", "numeric", writers="api")
    archived = _config(team, "old", "boolean")
    scores.archive_score_config(config=archived, author=Author(user=team.owner))
    scores.add_score(target=Target(answer.thread, message=answer), author=Author(token_name="ci"),
                     spec=ScoreSpec("latency", 3))  # fmt: skip
    page = team.client(team.editor).get(f"/t/{answer.thread_id}/").content.decode()
    assert page.count('class="score-panel"') == 2  # the answer's and the thread's
    assert page.count("Save helpfulness") == 2
    assert "Save latency" not in page and "Save old" not in page
    assert "Remove my" not in page  # the API's score is no one's own

    viewer = team.client(team.viewer).get(f"/t/{answer.thread_id}/").content.decode()
    assert "score-panel" not in viewer and "/score/" not in viewer
    assert "latency" in viewer  # the chips stay for every reader

    _, secret = create_share(thread=answer.thread, user=team.editor)
    shared = team.client(team.viewer).get(f"/s/{secret}/").content.decode()
    assert "score-panel" not in shared and "score-chip" not in shared


def test_without_configs_the_panel_says_so_and_links_admins_to_the_scores_page(
    team: Team,
) -> None:
    answer = _answer(team)
    editor = team.client(team.editor).get(f"/t/{answer.thread_id}/").content.decode()
    assert "No score configs yet." in editor and "A project admin adds them." in editor
    assert 'href="/p/alpha/scores/"' not in editor
    owner = team.client(team.owner).get(f"/t/{answer.thread_id}/").content.decode()
    assert 'No score configs yet. <a href="/p/alpha/scores/">' in owner


def test_the_ledger_refuses_a_viewers_score_and_an_outsiders_removal(team: Team) -> None:
    answer = _answer(team)
    _config(team, "helpfulness", "numeric")
    with pytest.raises(PermissionDenied):
        scores.set_person_score(user=team.viewer, message=answer, spec=ScoreSpec("helpfulness", 3))
    scores.set_person_score(user=team.editor, message=answer, spec=ScoreSpec("helpfulness", 3))
    with pytest.raises(PermissionDenied):
        scores.remove_person_score(user=team.outsider, message=answer, name="helpfulness")
    assert _mine(answer) == [("helpfulness", 3.0, "", "")]
    assert scores.remove_person_score(user=team.owner, message=answer, name="helpfulness") is False
    assert scores.remove_person_score(user=team.editor, message=answer, name="helpfulness")
    assert not Score.objects.exists()


def test_an_editor_scores_the_whole_thread_from_the_header(team: Team) -> None:
    answer = _answer(team)
    thread = answer.thread
    verdict = _config(team, "verdict", "categorical", labels=("pass", "fail"))
    editor = team.client(team.editor)
    url = f"/t/{thread.id}/score/"
    response = editor.post(url, {"config": verdict.pk, "value": "pass"})
    assert response.status_code == 303
    assert response["Location"] == f"/t/{thread.id}/#sc-thread-{thread.id}"
    page = editor.get(f"/t/{thread.id}/").content.decode()
    assert f'id="sc-thread-{thread.id}"' in page and "Score this conversation" in page
    swapped = editor.post(url, {"config": verdict.pk, "value": "fail"}, headers=HTMX)
    html = swapped.content.decode()
    assert f'class="msg-judgement thread-judgement" id="sc-thread-{thread.id}"' in html
    assert "Saved: verdict fail." in html
    stored = Score.objects.get()
    assert stored.message_id is None and stored.run_id is None and stored.label == "fail"
    assert editor.post(url, {"config": verdict.pk, "value": "maybe"}).status_code == 422
    assert Score.objects.get().label == "fail"
    editor.post(url, {"config": verdict.pk, "action": "remove"})
    assert not Score.objects.exists()
    viewer = team.client(team.viewer).get(f"/t/{thread.id}/").content.decode()
    assert "Score this conversation" not in viewer


def test_compare_offers_each_branchs_answer_the_panel_and_a_plain_post_returns_there(
    team: Team,
) -> None:
    thread = make_thread("Two answers", project=team.alpha)
    question = last_message(ask(thread, "Rain?"))
    first = last_message(say(thread, "Probably not."))
    second = last_message(say(thread, "Bring a coat.", fork_from=question.id))
    helpfulness = _config(team, "helpfulness", "numeric", min_value=1, max_value=5)
    compare = f"/t/{thread.id}/fork/{question.id}/compare/"

    page = team.client(team.editor).get(compare).content.decode()
    for answer in (first, second):
        assert f'action="/t/{thread.id}/m/{answer.id}/score/"' in page
    assert f'name="next" value="{compare}"' in page
    response = team.client(team.editor).post(
        _url(second), {"config": helpfulness.pk, "value": "2", "next": compare}
    )
    assert (response.status_code, response["Location"]) == (303, compare)
    assert _mine(second) == [("helpfulness", 2.0, "", "")] and _mine(first) == []
    # The score shows on its own branch's answer only; a viewer reads it, with no panel.
    seen = team.client(team.viewer).get(compare).content.decode()
    assert seen.count('score-name">helpfulness</span> <strong class="score-value">2<') >= 1
    assert "/score/" not in seen
