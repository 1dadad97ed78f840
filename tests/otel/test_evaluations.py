"""Evaluations over OpenTelemetry become scores: `gen_ai.evaluation.result` as a span event and
as an OTLP log record (protobuf and JSON), on the answer its span produced or whose
gen_ai.response.id it names, exactly once however often it is exported."""

from __future__ import annotations

import gzip

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tests.base import Team
from tests.otel.evaluation_events import (
    JSON,
    LOGS,
    SPAN,
    TRACE,
    answer_span,
    evaluation,
    logs,
    logs_json,
    post,
    record,
    send_logs,
    send_spans,
    with_event,
)
from tests.otel.spans import SECOND, T0, chat, span, text
from transcripts.models import ApiToken, AuditRecord, Message, Run, Score

pytestmark = pytest.mark.django_db


def answer_of(text_: str) -> Message:
    return Message.objects.get(role="assistant", parts__0__text=text_)


def test_a_span_event_scores_the_answer_its_span_produced(team: Team) -> None:
    token = team.token(team.alpha, "ingest")
    answer = send_spans(token, with_event(answer_span(), evaluation()))

    assert not answer.HasField("partial_success")
    score = Score.objects.get()
    message = answer_of("Sunny.")
    assert score.message_id == message.id
    assert score.run_id is None
    assert score.thread_id == message.thread_id
    assert (score.name, score.value, score.label) == ("helpfulness", 4.0, "")
    assert (score.source, score.comment) == ("evaluator", "Answers the question.")
    assert score.project_id == team.alpha.id
    assert score.author_id is None
    assert score.token_id == ApiToken.objects.get().id
    assert score.external_id.startswith("otel:")
    audit = AuditRecord.objects.get(action="add_score")
    assert audit.details["via"] == "api"


def test_each_call_of_an_agent_run_gets_its_own_event(team: Team) -> None:
    """Two calls of one trace are one run: each event lands on its own call's answer."""
    first = chat(
        trace=TRACE,
        span_id="0000000000000001",
        inputs=[text("user", "Weather?")],
        outputs=[text("assistant", "Where?")],
        conversation="agent",
    )
    second = chat(
        trace=TRACE,
        span_id="0000000000000002",
        inputs=[text("user", "Weather?"), text("assistant", "Where?"), text("user", "Paris")],
        outputs=[text("assistant", "Sunny in Paris.")],
        conversation="agent",
        start=T0 + 5 * SECOND,
    )
    send_spans(
        team.token(team.alpha),
        with_event(first, evaluation(name="clarity", value=2)),
        with_event(second, evaluation(name="clarity", value=5), at=T0 + 7 * SECOND),
    )

    assert Run.objects.count() == 1
    by_message = dict(Score.objects.values_list("message_id", "value"))
    assert by_message == {answer_of("Where?").id: 2.0, answer_of("Sunny in Paris.").id: 5.0}


def test_an_event_sent_again_gives_one_score_and_a_new_one_another(team: Team) -> None:
    token = team.token(team.alpha)
    span = with_event(answer_span(), evaluation(value=3))
    send_spans(token, span)
    send_spans(token, span)  # an exporter's retry

    assert Score.objects.count() == 1
    assert Score.objects.get().value == 3.0
    assert AuditRecord.objects.filter(action="update_score").count() == 1
    # The same evaluation run again later is another event: another score.
    send_spans(token, with_event(answer_span(), evaluation(value=5), at=T0 + 60 * SECOND))
    assert list(Score.objects.order_by("value").values_list("value", flat=True)) == [3.0, 5.0]


def test_a_log_record_in_the_evaluated_span_scores_its_answer(team: Team) -> None:
    token = team.token(team.alpha, "ingest")
    send_spans(token, answer_span())
    answer = send_logs(token, record(evaluation(value=5), trace=TRACE, span_id=SPAN))

    assert not answer.HasField("partial_success")
    score = Score.objects.get()
    assert (score.message_id, score.value, score.source) == (
        answer_of("Sunny.").id,
        5.0,
        "evaluator",
    )
    assert score.comment == "Answers the question."


def test_a_json_log_record_finds_its_answer_by_response_id(team: Team) -> None:
    token = team.token(team.alpha, "ingest")
    send_spans(token, answer_span(response_id="chatcmpl-42"))
    assert answer_of("Sunny.").metadata["otel"]["responseId"] == "chatcmpl-42"
    values = evaluation(name="policy", value=None, label="pass", gen_ai__response__id="chatcmpl-42")
    body = logs_json(logs(record(values, as_attribute=True)))  # the older event.name attribute
    response = post(LOGS, token, body, JSON)

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == JSON
    answer = json_format.Parse(response.content, ExportLogsServiceResponse())
    assert not answer.HasField("partial_success")
    score = Score.objects.get()
    assert (score.message_id, score.name, score.label, score.value) == (
        answer_of("Sunny.").id,
        "policy",
        "pass",
        None,
    )


def test_a_json_log_record_finds_its_answer_by_span(team: Team) -> None:
    token = team.token(team.alpha, "ingest")
    send_spans(token, answer_span())
    body = logs_json(logs(record(evaluation(), trace=TRACE, span_id=SPAN)))
    response = post(LOGS, token, body, JSON)

    assert response.status_code == 200, response.content
    assert Score.objects.get().message_id == answer_of("Sunny.").id


def test_a_log_record_sent_again_gives_one_score(team: Team) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span(response_id="resp-1"))
    by_span = record(evaluation(name="helpfulness"), trace=TRACE, span_id=SPAN)
    by_response = record(evaluation(name="tone", gen_ai__response__id="resp-1"))
    for _ in range(2):
        send_logs(token, by_span, by_response)
    # Once more as gzipped OTLP JSON: the same events.
    body = gzip.compress(logs_json(logs(by_span, by_response)))
    assert post(LOGS, token, body, JSON, **{"Content-Encoding": "gzip"}).status_code == 200

    assert sorted(Score.objects.values_list("name", flat=True)) == ["helpfulness", "tone"]
    assert AuditRecord.objects.filter(action="update_score").count() == 4


def test_other_log_records_are_accepted_and_not_stored(team: Team) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span())
    answer = send_logs(
        token,
        record({"message": "hello"}, trace=TRACE, span_id=SPAN, event_name=""),
        record(evaluation(), trace=TRACE, span_id=SPAN, event_name="gen_ai.choice"),
    )

    assert not answer.HasField("partial_success")
    assert not Score.objects.exists()


def test_a_record_matching_nothing_is_counted_and_the_rest_are_taken(team: Team) -> None:
    token = team.token(team.alpha)
    send_spans(token, answer_span())
    answer = send_logs(
        token,
        record(evaluation(), trace=TRACE, span_id="00000000000000ff"),
        record(evaluation(name="tone"), trace=TRACE, span_id=SPAN),
        record(evaluation(name="style", gen_ai__response__id="nobody")),
    )

    assert answer.partial_success.rejected_log_records == 2
    message = answer.partial_success.error_message
    assert "log record 0: the evaluation helpfulness matches no stored answer" in message
    assert "log record 2: the evaluation style matches no stored answer" in message
    assert list(Score.objects.values_list("name", flat=True)) == ["tone"]


def test_an_event_on_a_span_that_answered_nothing_scores_its_run(team: Team) -> None:
    failed = chat(
        trace=TRACE,
        span_id=SPAN,
        inputs=[text("user", "Weather?")],
        outputs=[],
        conversation="failed",
        extra={"error.type": "timeout"},
    )
    failed.status.code = Status.STATUS_CODE_ERROR
    failed.status.message = "the model timed out"
    send_spans(team.token(team.alpha), with_event(failed, evaluation(name="latency", value=0)))

    score = Score.objects.get()
    run = Run.objects.get()
    assert (score.run_id, score.thread_id) == (run.id, run.thread_id)
    assert score.message is None


def test_an_event_on_an_agent_span_scores_the_last_answer_of_its_calls(team: Team) -> None:
    agent = span(trace=TRACE, span_id="00000000000000a0", name="invoke_agent support")
    first = chat(
        trace=TRACE,
        span_id="0000000000000001",
        parent="00000000000000a0",
        inputs=[text("user", "Weather?")],
        outputs=[text("assistant", "Where?")],
        conversation="agent",
    )
    second = chat(
        trace=TRACE,
        span_id="0000000000000002",
        parent="00000000000000a0",
        inputs=[text("user", "Weather?"), text("assistant", "Where?"), text("user", "Paris")],
        outputs=[text("assistant", "Sunny in Paris.")],
        conversation="agent",
        start=T0 + 5 * SECOND,
    )
    send_spans(team.token(team.alpha), with_event(agent, evaluation(name="task")), first, second)

    assert Score.objects.get().message_id == answer_of("Sunny in Paris.").id


def test_an_event_on_an_evaluator_span_under_the_call_scores_the_call_s_answer(
    team: Team,
) -> None:
    judge = span(trace=TRACE, span_id="00000000000000e1", name="evaluate", parent=SPAN)
    send_spans(team.token(team.alpha), answer_span(), with_event(judge, evaluation()))

    assert Score.objects.get().message_id == answer_of("Sunny.").id


DOCS_EXAMPLE = b"""{"resourceLogs": [{"scopeLogs": [{"logRecords": [{
      "timeUnixNano": "1790000003000000000",
      "eventName": "gen_ai.evaluation.result",
      "traceId": "5b8efff798038103d269b633813fc60c",
      "spanId": "eee19b7ec3c1b174",
      "attributes": [
        {"key": "gen_ai.evaluation.name", "value": {"stringValue": "helpfulness"}},
        {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 4}},
        {"key": "gen_ai.evaluation.explanation",
         "value": {"stringValue": "Answers the question."}}
      ]}]}]}]}"""


def test_the_docs_example_scores_the_answer(team: Team) -> None:
    """docs/otel.md, "Evaluations as scores": the curl example as written."""
    token = team.token(team.alpha, "ingest")
    send_spans(token, answer_span())
    response = post(LOGS, token, DOCS_EXAMPLE, JSON)

    assert response.status_code == 200
    assert response.json() == {}
    score = Score.objects.get()
    assert (score.message_id, score.value, score.comment) == (
        answer_of("Sunny.").id,
        4.0,
        "Answers the question.",
    )


def test_a_log_record_naming_its_conversation_is_matched_by_its_span_still(team: Team) -> None:
    """The conversation id narrows the look; a wrong one misleads nothing."""
    other_trace = "0af7651916cd43dd8448eb211c80319c"
    token = team.token(team.alpha)
    send_spans(
        token,
        answer_span(conversation="ticket-1"),
        answer_span(trace=other_trace, conversation="ticket-2", answer="Rainy."),
    )

    def hinted(name: str, conversation: str, trace: str) -> LogRecord:
        values = evaluation(name=name, gen_ai__conversation__id=conversation)
        return record(values, trace=trace, span_id=SPAN)

    send_logs(
        token,
        hinted("a", "ticket-1", TRACE),
        hinted("b", "ticket-2", other_trace),
        hinted("c", "ticket-2", TRACE),
    )

    assert dict(Score.objects.values_list("name", "message_id")) == {
        "a": answer_of("Sunny.").id,
        "b": answer_of("Rainy.").id,
        "c": answer_of("Sunny.").id,
    }
