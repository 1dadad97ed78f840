"""Judgement as data in the ledger (issue 28): feedback one per person, configs, scores checked
against their config (each refusal stores nothing), externalId updates, deletion with the
thread, and the audit log."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.ledger import scores
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.models import AuditRecord, Feedback, Message, Score, ScoreConfig, Thread

pytestmark = pytest.mark.django_db

API = Author(token_id=None, token_name="evaluator-bot")


def _answer(team: Team) -> Message:
    thread = make_thread("Scored", project=team.alpha)
    ask(thread, "How warm is it?")
    return last_message(say(thread, "Warm."))


def _config(team: Team, **spec: object) -> ScoreConfig:
    fields: dict[str, object] = {"name": "helpfulness", "data_type": "numeric"}
    fields.update(spec)
    return scores.create_score_config(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=ConfigSpec(**fields),  # type: ignore[arg-type]
    )


def _add(message: Message, **spec: object) -> Score:
    return scores.add_score(
        target=Target(thread=message.thread, message=message),
        author=API,
        spec=ScoreSpec(**spec),  # type: ignore[arg-type]
    )[0]


def test_feedback_is_one_per_person_and_message_changeable_and_removable(team: Team) -> None:
    answer = _answer(team)
    scores.give_feedback(user=team.viewer, message=answer, up=True)
    scores.give_feedback(user=team.viewer, message=answer, up=False, comment="  too short ")
    scores.give_feedback(user=team.editor, message=answer, up=True)

    mine = Feedback.objects.get(user=team.viewer)
    assert (Feedback.objects.count(), mine.up, mine.comment) == (2, False, "too short")
    assert scores.remove_feedback(user=team.viewer, message=answer) is True
    assert scores.remove_feedback(user=team.viewer, message=answer) is False
    assert list(Feedback.objects.values_list("user__username", flat=True)) == ["editor"]
    actions = AuditRecord.objects.filter(target_id=answer.id).values_list("action", flat=True)
    assert sorted(actions) == [
        "change_feedback", "give_feedback", "give_feedback", "remove_feedback"
    ]  # fmt: skip


def test_the_database_refuses_a_second_feedback_of_one_person(team: Team) -> None:
    answer = _answer(team)
    scores.give_feedback(user=team.viewer, message=answer, up=True)
    with pytest.raises(IntegrityError):
        Feedback.objects.create(thread=answer.thread, message=answer, user=team.viewer, up=False)


def test_feedback_needs_a_reader_and_an_answer(team: Team) -> None:
    answer = _answer(team)
    with pytest.raises(PermissionDenied):
        scores.give_feedback(user=team.outsider, message=answer, up=True)
    with pytest.raises(InvalidInput) as refused:
        scores.give_feedback(user=team.viewer, message=answer.parent, up=True)  # type: ignore[arg-type]
    assert refused.value.details["field"] == "message"
    assert not Feedback.objects.exists()


@pytest.mark.parametrize(
    ("config", "spec", "field"),
    [
        ({"min_value": 1, "max_value": 5}, {"name": "helpfulness", "value": 7}, "value"),
        ({"min_value": 1, "max_value": 5}, {"name": "helpfulness", "label": "good"}, "label"),
        ({"min_value": 1, "max_value": 5}, {"name": "helpfulness"}, "value"),
        ({"data_type": "categorical", "labels": ("pass", "fail")},
         {"name": "helpfulness", "label": "maybe"}, "label"),
        ({"data_type": "categorical", "labels": ("pass", "fail")},
         {"name": "helpfulness", "value": 1}, "value"),
        ({"data_type": "boolean"}, {"name": "helpfulness", "value": 2}, "value"),
        ({"data_type": "boolean"}, {"name": "helpfulness", "label": "yes"}, "label"),
        ({"writers": "people"}, {"name": "helpfulness", "value": 3}, "source"),
        ({}, {"name": "  ", "value": 3}, "name"),
        ({}, {"name": "other", "value": float("nan")}, "value"),
        ({}, {"name": "other", "value": 1, "comment": "x" * 2001}, "comment"),
        ({}, {"name": "other", "value": 1, "comment": "a\x00b"}, "comment"),
        ({}, {"name": "other", "value": 1, "external_id": "e\x00"}, "externalId"),
    ],
)  # fmt: skip
def test_a_score_outside_its_config_is_refused_naming_the_field(
    team: Team, config: dict[str, object], spec: dict[str, object], field: str
) -> None:
    answer = _answer(team)
    _config(team, **config)
    with pytest.raises(InvalidInput) as refused:
        _add(answer, **spec)
    assert refused.value.details["field"] == field
    assert not Score.objects.exists()


def test_a_name_without_config_is_refused_only_when_the_project_requires_configs(
    team: Team,
) -> None:
    answer = _answer(team)
    assert _add(answer, name="tone", label="friendly").config is None
    scores.set_scores_need_config(project=team.alpha, user=team.owner, required=True)
    with pytest.raises(InvalidInput) as refused:
        _add(answer, name="tone2", value=1)
    assert refused.value.details["field"] == "name"
    assert Score.objects.count() == 1


def test_a_valid_score_is_stored_with_its_config_and_boolean_labels(team: Team) -> None:
    answer = _answer(team)
    config = _config(team, name="safe", data_type="boolean")
    score = _add(answer, name="safe", value=1, source="evaluator")
    assert (score.config_id, score.value, score.label, score.source) == (
        config.pk, 1.0, "true", "evaluator"
    )  # fmt: skip
    assert (score.target_type, score.thread_id, score.project_id) == (
        "message", answer.thread_id, team.alpha.pk
    )  # fmt: skip


def test_a_repeated_external_id_updates_the_score(team: Team) -> None:
    answer = _answer(team)
    first = _add(answer, name="helpfulness", value=2, external_id="eval-1")
    again = _add(answer, name="helpfulness", value=4, external_id="eval-1", comment="better")
    assert again.pk == first.pk
    assert list(Score.objects.values_list("value", "comment")) == [(4.0, "better")]


def test_configs_have_one_live_name_and_archiving_keeps_scores(team: Team) -> None:
    answer = _answer(team)
    config = _config(team, min_value=1, max_value=5)
    with pytest.raises(Conflict):
        _config(team)
    score = _add(answer, name="helpfulness", value=5)
    scores.archive_score_config(config=config, author=Author(user=team.owner))
    renewed = _config(team, data_type="categorical", labels=("low", "high"))
    score.refresh_from_db()
    assert score.config_id == config.pk
    assert _add(answer, name="helpfulness", label="high").config_id == renewed.pk
    with pytest.raises(PermissionDenied):
        scores.archive_score_config(config=renewed, author=Author(user=team.editor))


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"data_type": "ordinal"}, "dataType"),
        ({"min_value": 5, "max_value": 1}, "min"),
        ({"data_type": "boolean", "max_value": 1}, "min"),
        ({"data_type": "categorical"}, "labels"),
        ({"data_type": "categorical", "labels": ("a", "a")}, "labels"),
        ({"labels": ("a",)}, "labels"),
        ({"writers": "robots"}, "writers"),
    ],
)
def test_a_config_that_makes_no_sense_is_refused(
    team: Team, spec: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        _config(team, **spec)
    assert refused.value.details["field"] == field
    assert not ScoreConfig.objects.exists()


def test_a_viewer_may_not_configure_scores(team: Team) -> None:
    with pytest.raises(PermissionDenied):
        scores.create_score_config(
            project=team.alpha, author=Author(user=team.viewer), spec=ConfigSpec("x", "boolean")
        )
    assert not ScoreConfig.objects.exists()


def test_scores_and_feedback_go_with_their_thread(team: Team) -> None:
    answer = _answer(team)
    _add(answer, name="helpfulness", value=3)
    scores.add_score(target=Target(thread=answer.thread), author=API, spec=ScoreSpec("overall", 1))
    scores.give_feedback(user=team.viewer, message=answer, up=True)
    delete_threads([answer.thread_id])
    assert not Thread.objects.exists()
    assert (Score.objects.count(), Feedback.objects.count()) == (0, 0)


def test_a_score_is_deleted_by_its_author_or_an_admin(team: Team) -> None:
    answer = _answer(team)
    target = Target(thread=answer.thread, message=answer)
    own, _ = scores.add_score(
        target=target, author=Author(user=team.viewer), spec=ScoreSpec("tone", 1, source="person")
    )
    with pytest.raises(PermissionDenied):
        scores.delete_score(score=own, author=Author(user=team.editor))
    scores.delete_score(score=own, author=Author(user=team.viewer))
    other = _add(answer, name="tone", value=2)
    scores.delete_score(score=other, author=Author(user=team.owner))
    assert not Score.objects.exists()
    assert AuditRecord.objects.filter(action="delete_score").count() == 2


def test_every_write_is_audited_with_who_wrote(team: Team) -> None:
    answer = _answer(team)
    config = _config(team, min_value=1, max_value=5)
    _add(answer, name="helpfulness", value=2, external_id="e-1")
    _add(answer, name="helpfulness", value=3, external_id="e-1")
    scores.archive_score_config(config=config, author=Author(user=team.owner))
    scores.set_scores_need_config(project=team.alpha, user=team.owner, required=True)
    records = list(
        AuditRecord.objects.order_by("id").values_list("action", "actor_name", "details")
    )
    assert [(action, actor) for action, actor, _ in records] == [
        ("create_score_config", "owner"),
        ("add_score", ""),
        ("update_score", ""),
        ("archive_score_config", "owner"),
        ("set_scores_need_config", "owner"),
    ]
    assert records[1][2] == {
        "name": "helpfulness", "kind": "message", "via": "api", "token": "evaluator-bot",
        "tokenId": None,
    }  # fmt: skip
    assert AuditRecord.objects.filter(project=team.alpha).count() == 5


def test_a_person_may_not_write_a_score_its_config_keeps_for_the_api(team: Team) -> None:
    answer = _answer(team)
    _config(team, name="latency", writers="api")
    with pytest.raises(InvalidInput) as refused:
        scores.add_score(
            target=Target(thread=answer.thread, run=answer.run),
            author=Author(user=team.editor),
            spec=ScoreSpec("latency", 1, source="person"),
        )
    assert refused.value.details["field"] == "source"
    person, _ = scores.add_score(
        target=Target(thread=answer.thread, run=answer.run),
        author=Author(user=team.editor),
        spec=ScoreSpec("speed", 1, source="person"),
    )
    assert (person.target_type, person.author_id, person.source) == (
        "run",
        team.editor.pk,
        "person",
    )
    assert Score.objects.count() == 1


def test_a_feedback_comment_with_nul_is_refused_and_stores_nothing(team: Team) -> None:
    answer = _answer(team)
    with pytest.raises(InvalidInput) as refused:
        scores.give_feedback(user=team.viewer, message=answer, up=True, comment="a\x00b")
    assert refused.value.details["field"] == "comment"
    assert not Feedback.objects.exists()
