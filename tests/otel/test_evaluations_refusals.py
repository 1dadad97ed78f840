"""What the receiver refuses of evaluations: a score its config refuses, an event that is not
an evaluation, a token without the ingest scope, and anything out of the token's reach (another
project's spans and answers, a hidden thread) — each record by itself, nothing stored for it."""

from __future__ import annotations

from typing import Any

import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.api.test_limits import within_one_minute
from tests.base import Team
from tests.otel.evaluation_events import (
    JSON,
    LOGS,
    SPAN,
    TRACE,
    answer_span,
    evaluation,
    logs,
    post,
    record,
    send_logs,
    send_spans,
    with_event,
)
from transcripts.ledger.moderation import hide_thread
from transcripts.ledger.scores import (
    Author,
    ConfigSpec,
    create_score_config,
    set_scores_need_config,
)
from transcripts.models import Message, Score, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def configs(team: Team) -> None:
    """helpfulness 1-5, policy pass/fail, correct true/false in alpha."""
    author = Author(user=team.owner)
    for spec in (
        ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
        ConfigSpec(name="policy", data_type="categorical", labels=("pass", "fail")),
        ConfigSpec(name="correct", data_type="boolean"),
    ):
        create_score_config(project=team.alpha, author=author, spec=spec)


def in_span(**values: Any) -> LogRecord:
    """A log record emitted in the answer's span, of an evaluation with values."""
    return record(evaluation(**values), trace=TRACE, span_id=SPAN)


REFUSED = {
    "a 7 on 1-5": (
        {"value": 7},
        "gen_ai.evaluation.score.value: value must be from 1 to 5 for helpfulness",
    ),
    "an unknown label": (
        {"name": "policy", "value": None, "label": "maybe"},
        "gen_ai.evaluation.score.label: label must be one of pass, fail for policy",
    ),
    "a label for a boolean": (
        {"name": "correct", "value": None, "label": "yes"},
        "gen_ai.evaluation.score.label: label must be true or false for correct",
    ),
    "no name": ({"name": ""}, "gen_ai.evaluation.name is required"),
    "no score": (
        {"value": None},
        "gen_ai.evaluation.score.value or gen_ai.evaluation.score.label is required",
    ),
    "a text value": ({"value": "4"}, "gen_ai.evaluation.score.value must be a finite number"),
    "a failed evaluation": (
        {"value": None, "error__type": "timeout"},
        "the evaluation helpfulness failed (error.type timeout)",
    ),
    "a NUL in the explanation": (
        {"explanation": "a \u0000 b"},
        "attributes.gen_ai.evaluation.explanation holds a NUL character",
    ),
}


@pytest.mark.usefixtures("configs")
@pytest.mark.parametrize("case", REFUSED)
def test_a_refused_record_is_counted_and_the_rest_of_the_batch_taken(team: Team, case: str) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span())
    values, reason = REFUSED[case]
    answer = send_logs(token, in_span(name="policy", value=None, label="fail"), in_span(**values))

    assert answer.partial_success.rejected_log_records == 1
    assert f"log record 1: {reason}" in answer.partial_success.error_message
    assert list(Score.objects.values_list("name", "label")) == [("policy", "fail")]


@pytest.mark.usefixtures("configs")
def test_a_value_and_a_label_together_keep_what_the_config_takes(team: Team) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span())
    answer = send_logs(
        token,
        in_span(name="helpfulness", value=4, label="good"),
        in_span(name="policy", value=1, label="pass"),
        in_span(name="correct", value=True, label="true"),
        in_span(name="unconfigured", value=0.8, label="relevant"),
    )

    assert not answer.HasField("partial_success"), answer.partial_success.error_message
    stored = {
        name: (value, label)
        for name, value, label in Score.objects.values_list("name", "value", "label")
    }
    assert stored == {
        "helpfulness": (4.0, ""),
        "policy": (None, "pass"),
        "correct": (1.0, "true"),
        "unconfigured": (0.8, "relevant"),
    }


def test_a_name_without_config_is_refused_only_when_the_project_requires_configs(
    team: Team,
) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span())
    assert not send_logs(token, in_span(name="fresh")).HasField("partial_success")

    set_scores_need_config(project=team.alpha, user=team.owner, required=True)
    answer = send_logs(token, in_span(name="another"))
    assert answer.partial_success.rejected_log_records == 1
    assert (
        "gen_ai.evaluation.name: another is not a score configured in this project"
        in answer.partial_success.error_message
    )
    assert list(Score.objects.values_list("name", flat=True)) == ["fresh"]


@pytest.mark.usefixtures("configs")
def test_a_refused_span_event_is_a_warning_and_its_span_is_stored(team: Team) -> None:
    answer = send_spans(team.token(team.alpha), with_event(answer_span(), evaluation(value=9)))

    assert answer.partial_success.rejected_spans == 0
    assert answer.partial_success.error_message == (
        f"span {SPAN} event 0: gen_ai.evaluation.score.value: value must be from 1 to 5"
        " for helpfulness"
    )
    assert Message.objects.filter(role="assistant").exists()
    assert not Score.objects.exists()


def test_the_logs_endpoint_requires_a_token_with_the_ingest_scope(team: Team) -> None:
    body = logs(in_span()).SerializeToString()
    assert post(LOGS, None, body).status_code == 401
    assert post(LOGS, "not-a-token", body).status_code == 401
    assert post(LOGS, team.token(team.alpha, "read"), body).status_code == 403


def test_the_logs_endpoint_refuses_what_is_not_a_logs_export(team: Team, settings: Any) -> None:
    token = team.token(team.alpha)
    response = post(LOGS, token, b"\xff\xff\xff\xff not protobuf")
    assert response.status_code == 400
    assert "ExportLogsServiceRequest" in status_pb2.Status.FromString(response.content).message
    response = post(LOGS, token, b"[1, 2]", JSON)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "an OTLP JSON body is an object with resourceLogs"
    assert post(LOGS, token, b"{}", "text/plain").status_code == 415
    assert post(LOGS, token, b"{}", JSON, **{"Content-Encoding": "br"}).status_code == 415
    settings.TRANSCRIPTS_OTLP_MAX_BYTES = 1024
    assert post(LOGS, token, b"\0" * 2048).status_code == 413


def test_another_project_s_spans_and_answers_match_nothing(team: Team) -> None:
    send_spans(team.token(team.alpha), answer_span(response_id="resp-alpha"))
    beta = team.token(team.beta)
    answer = send_logs(
        beta, in_span(), record(evaluation(name="tone", gen_ai__response__id="resp-alpha"))
    )

    assert answer.partial_success.rejected_log_records == 2
    assert "matches no stored answer" in answer.partial_success.error_message
    assert not Score.objects.exists()
    # A span event of beta's on alpha's span ids scores beta's own thread only.
    send_spans(beta, with_event(answer_span(), evaluation()))
    assert Score.objects.get().project_id == team.beta.id
    assert Score.objects.get().thread.project_id == team.beta.id


def test_a_hidden_thread_matches_nothing_for_a_token_without_the_admin_scope(
    team: Team,
) -> None:
    send_spans(team.token(team.alpha), answer_span(response_id="resp-1"))
    hide_thread(user=team.owner, thread=Thread.objects.get(), reason="probe")
    by_span, by_response = in_span(), record(evaluation(gen_ai__response__id="resp-1"))

    answer = send_logs(team.token(team.alpha, "ingest"), by_span, by_response)
    assert answer.partial_success.rejected_log_records == 2
    assert not Score.objects.exists()

    answer = send_logs(team.token(team.alpha, "ingest", "admin"), by_span)
    assert not answer.HasField("partial_success")
    assert Score.objects.count() == 1


def test_log_records_count_as_events_a_minute(team: Team, settings: Any) -> None:
    within_one_minute(5)
    settings.TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE = 3
    token = team.token(team.alpha)
    send_spans(token, answer_span())  # one span: one event
    assert post(LOGS, token, logs(in_span()).SerializeToString()).status_code == 200

    refused = post(LOGS, token, logs(in_span(value=1), in_span(value=2)).SerializeToString())
    assert refused.status_code == 429
    status = status_pb2.Status.FromString(refused.content)
    retry = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(retry)
    assert list(Score.objects.values_list("value", flat=True)) == [4.0]
