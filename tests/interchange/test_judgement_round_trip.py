"""Canonical export and import carry scores and feedback (issue 28): who, when, source, name,
value or label, comment and target come back exactly; into another project they land on the
new ids, link to its live configs, and feedback by someone who is not a member is skipped and
counted in the import report; a malformed score is a 422 naming its path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.base import Team
from tests.factories import ask, last_message, make_thread, say
from transcripts import interchange
from transcripts.errors import InvalidInput
from transcripts.ledger import scores
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.ledger.tokens import issue_token
from transcripts.models import ApiToken, Feedback, Message, Score, Thread

pytestmark = pytest.mark.django_db

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    # Each example writes threads: shrinking a failure would take minutes.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# (target: 0 thread, 1 run, 2 message; name; value or label; comment; source)
score_specs = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["helpfulness", "policy", "tone match"]),
        st.one_of(
            st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: (v, "")),
            st.sampled_from(["pass", "fail"]).map(lambda label: (None, label)),
        ),
        st.text(max_size=30).filter(lambda t: "\x00" not in t).map(str.strip),
        st.booleans(),
    ),
    max_size=6,
)
feedback_specs = st.dictionaries(
    st.sampled_from(["viewer", "editor", "owner"]),
    st.tuples(st.booleans(), st.text(max_size=20).filter(lambda t: "\x00" not in t)),
)


def _scored_thread(team: Team, specs: list[Any], feedback: dict[str, Any]) -> Thread:
    thread = make_thread("Judged", project=team.alpha)
    ask(thread, "Question?")
    answer = last_message(say(thread, "Answer."))
    people = {"viewer": team.viewer, "editor": team.editor, "owner": team.owner}
    token = ApiToken.objects.get(project=team.alpha, name="grader")
    for target, name, (value, label), comment, by_person in specs:
        targets = [Target(thread), Target(thread, run=answer.run), Target(thread, message=answer)]
        where = targets[target]
        author = (
            Author(user=team.editor)
            if by_person
            else Author(token_id=token.pk, token_name=token.name)
        )
        spec = ScoreSpec(
            name=name,
            value=value,
            label=label,
            comment=comment.strip(),
            source="person" if by_person else "evaluator",
        )
        scores.add_score(target=where, author=author, spec=spec)
    for who, (up, comment) in feedback.items():
        scores.give_feedback(user=people[who], message=answer, up=up, comment=comment)
    return thread


def _canonical(thread: Thread) -> dict[str, Any]:
    exported = json.loads(interchange.export_thread(thread, "canonical").content)
    for score in exported.get("scores", []):
        score.pop("id")  # a score's id is the store's own
    return exported


def _judgement(exported: dict[str, Any]) -> tuple[Any, Any]:
    return exported.get("scores", []), exported.get("feedback", [])


def test_scores_and_feedback_come_back_exactly(team: Team) -> None:
    issue_token(project=team.alpha, name="grader", scopes=["ingest"])

    @given(score_specs, feedback_specs)
    @SETTINGS
    def check(specs: list[Any], feedback: dict[str, Any]) -> None:
        thread = _scored_thread(team, specs, feedback)
        before = _canonical(thread)
        delete_threads([thread.id])

        result = interchange.import_data(before, "canonical", project=team.alpha)

        (again,) = Thread.objects.filter(pk__in=result.thread_ids)
        assert again.id == thread.id  # its ids were free again, so kept
        after = _canonical(again)
        assert _judgement(after) == _judgement(before)
        assert len(after.get("scores", [])) == len(specs)
        assert len(after.get("feedback", [])) == len(feedback)
        tokens = {s["token"] for s in after.get("scores", []) if s["source"] == "evaluator"}
        assert tokens <= {"grader"}
        delete_threads([again.id])

    check()


def test_into_another_project_scores_land_on_the_new_ids(team: Team) -> None:
    issue_token(project=team.alpha, name="grader", scopes=["ingest"])
    thread = _scored_thread(
        team,
        [(2, "helpfulness", (4.0, ""), "clear", False), (1, "policy", (None, "pass"), "", True)],
        {"viewer": (False, "too long")},
    )
    scores.create_score_config(
        project=team.beta,
        author=Author(user=team.outsider),
        spec=ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
    )
    document = _canonical(thread)

    result = interchange.import_data(document, "canonical", project=team.beta)

    (copy,) = Thread.objects.filter(pk__in=result.thread_ids)
    assert copy.id != thread.id
    answer = Message.objects.get(thread=copy, role="assistant")
    on_message = Score.objects.get(thread=copy, message__isnull=False)
    on_run = Score.objects.get(thread=copy, run__isnull=False)
    assert (on_message.message_id, on_message.value, on_message.comment) == (
        answer.id,
        4.0,
        "clear",
    )
    assert on_message.config is not None and on_message.config.project_id == team.beta.id
    assert on_message.source == "evaluator" and on_message.author_id is None
    assert on_message.token_id is None  # beta has no token called grader
    assert (on_run.run_id, on_run.label, on_run.config) == (answer.run_id, "pass", None)
    assert on_run.author_id is None  # editor is no member of beta
    assert not Feedback.objects.filter(thread=copy).exists()
    report = result.report
    assert (report["scores"], report["feedback"], report["skippedTotal"]) == (2, 0, 1)
    assert report["skipped"][0]["what"] == "feedback"
    assert "viewer is not a member here" in report["skipped"][0]["why"]
    # The original keeps its own.
    assert Score.objects.filter(thread=thread).count() == 2


@pytest.mark.parametrize(
    ("score", "path"),
    [
        ({"name": "", "value": 1, "source": "api"}, "$.scores[0].name"),
        ({"name": "x", "value": "high", "source": "api"}, "$.scores[0].value"),
        ({"name": "x", "value": 1, "source": "robot"}, "$.scores[0].source"),
        ({"name": "x", "value": 1, "source": "api", "messageId": "nope"}, "$.scores[0].messageId"),
        ({"name": "x", "source": "api"}, "$.scores[0].value"),
        ({"name": "x", "value": 1, "source": "api", "comment": "a\x00b"}, "$.scores[0].comment"),
    ],
)
def test_a_malformed_score_is_refused_naming_its_path(
    team: Team, score: dict[str, Any], path: str
) -> None:
    issue_token(project=team.alpha, name="grader", scopes=["ingest"])
    thread = _scored_thread(team, [], {})
    document = _canonical(thread)
    document["scores"] = [score]
    delete_threads([thread.id])

    with pytest.raises(InvalidInput) as refused:
        interchange.import_data(document, "canonical", project=team.alpha)

    assert path in [p["path"] for p in refused.value.details["problems"]]
    assert not Thread.objects.exists() and not Score.objects.exists()
