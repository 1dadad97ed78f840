"""What the OTLP receiver refuses: spans it cannot store, each by itself with a partial_success
that counts it (never a 500, never the batch), and threads the token may not write to."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.base import Team
from tests.otel.spans import chat, otlp_json, request, span, text
from transcripts.ledger.moderation import hide_thread
from transcripts.models import Message, Run, Thread

URL = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"
GOOD_TRACE = "5b8efff798038103d269b633813fc60c"
BAD_TRACE = "ffffffffffffffffffffffffffffffff"
pytestmark = pytest.mark.django_db


def post(token: str, body: bytes, content_type: str = PROTOBUF) -> Any:
    return Client().post(
        URL, body, content_type=content_type, headers={"Authorization": f"Bearer {token}"}
    )


def good() -> Span:
    return chat(
        trace=GOOD_TRACE,
        span_id="0000000000000001",
        inputs=[text("user", "Hi")],
        outputs=[text("assistant", "Hello")],
        conversation="good",
    )


def bad(**extra: Any) -> Span:
    return chat(
        trace=BAD_TRACE,
        span_id="00000000000000bb",
        inputs=[text("user", "Hi")],
        outputs=[text("assistant", "Hello")],
        conversation="bad",
        extra=extra,
    )


def answer_of(response: Any) -> ExportTraceServiceResponse:
    assert response.status_code == 200, response.content
    return ExportTraceServiceResponse.FromString(response.content)


BAD_SPANS = {
    "NUL in the model": {"gen_ai.request.model": "gpt\u00004o", "gen_ai.response.model": ""},
    "NUL in the response model": {"gen_ai.response.model": "gpt\u00004o"},
    "NUL in the provider": {"gen_ai.provider.name": "open\u0000ai"},
    "NUL in the agent name": {"gen_ai.agent.name": "agent\u0000"},
    "NUL in the conversation id": {"gen_ai.conversation.id": "bad\u0000"},
    "NUL in a finish reason": {"gen_ai.response.finish_reasons": ["st\u0000op"]},
    "NUL in an attribute key": {"odd\u0000key": "x"},
    "NUL in an unread attribute": {"custom": "x\u0000y"},
    "NaN usage": {"gen_ai.usage.input_tokens": float("nan")},
    "infinite usage": {"gen_ai.usage.output_tokens": float("inf")},
}


@pytest.mark.parametrize("attributes", BAD_SPANS.values(), ids=BAD_SPANS.keys())
def test_a_span_that_cannot_be_stored_is_refused_by_itself(
    team: Team, attributes: dict[str, Any]
) -> None:
    response = post(team.token(team.alpha), request(good(), bad(**attributes)).SerializeToString())
    answer = answer_of(response)
    stored = set(Thread.objects.values_list("external_id", flat=True))
    assert answer.partial_success.rejected_spans == 1
    assert "span 00000000000000bb:" in answer.partial_success.error_message
    assert stored == {"good"}
    assert Message.objects.filter(thread__external_id="good").count() == 3


def test_a_span_with_a_nul_in_its_name_or_an_event_is_refused_in_otlp_json(team: Team) -> None:
    named = bad()
    named.name = "chat\u0000"
    evented = bad()
    evented.span_id = bytes.fromhex("00000000000000cc")
    event = evented.events.add()
    event.name = "ev\u0000"
    body = otlp_json(request(good(), named, evented))
    response = post(team.token(team.alpha), body, "application/json")
    assert response.status_code == 200, response.content
    assert '"rejectedSpans": "2"' in response.content.decode()
    assert set(Thread.objects.values_list("external_id", flat=True)) == {"good"}


def test_the_largest_integers_are_stored_as_sent(team: Team) -> None:
    large = bad(**{"gen_ai.usage.input_tokens": 2**63 - 1, "x": -(2**63)})
    answer = answer_of(post(team.token(team.alpha), request(large).SerializeToString()))
    assert not answer.HasField("partial_success")
    assert Run.objects.get(thread__external_id="bad").usage["inputTokens"] == 2**63 - 1


def test_the_largest_span_times_are_stored_as_sent(team: Team) -> None:
    late = bad()
    late.end_time_unix_nano = 2**64 - 1
    late.start_time_unix_nano = 2**64 - 2
    answer = answer_of(post(team.token(team.alpha), request(good(), late).SerializeToString()))
    assert not answer.HasField("partial_success")
    years = {m.created_at.year for m in Message.objects.filter(thread__external_id="bad")}
    assert years == {2554}


def _hidden_thread(team: Team) -> Thread:
    """conv-h of alpha, written once through OTLP, then hidden by a moderator."""
    span_ = chat(
        trace=GOOD_TRACE,
        span_id="00000000000000a1",
        inputs=[text("user", "Hi")],
        outputs=[text("assistant", "Hello")],
        conversation="conv-h",
    )
    answer_of(post(team.token(team.alpha), request(span_).SerializeToString()))
    thread = Thread.objects.get(external_id="conv-h")
    hide_thread(user=team.owner, thread=thread, reason="probe")
    return thread


def _more_of_conv_h() -> bytes:
    more = chat(
        trace="aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        span_id="00000000000000a2",
        inputs=[text("user", "Still there?")],
        outputs=[text("assistant", "Yes.")],
        conversation="conv-h",
    )
    return request(good(), more).SerializeToString()


def test_an_ingest_token_cannot_write_into_a_hidden_thread(team: Team) -> None:
    thread = _hidden_thread(team)
    messages = Message.objects.filter(thread=thread).count()
    runs = Run.objects.filter(thread=thread).count()
    answer = answer_of(post(team.token(team.alpha, "ingest"), _more_of_conv_h()))
    assert answer.partial_success.rejected_spans == 1
    message = answer.partial_success.error_message
    assert message == "span 00000000000000a2: the thread of conversation conv-h does not exist"
    assert thread.id not in message
    assert Message.objects.filter(thread=thread).count() == messages
    assert Run.objects.filter(thread=thread).count() == runs
    # The other conversation of the batch is stored.
    assert Message.objects.filter(thread__external_id="good").count() == 3
    # As the events API answers for a run of that thread.
    run = Run.objects.filter(thread=thread).first()
    assert run is not None
    response = Client().get(
        f"/api/v1/runs/{run.id}",
        headers={"Authorization": f"Bearer {team.token(team.alpha, 'ingest', 'read')}"},
    )
    assert response.status_code == 404


def test_an_admin_token_still_writes_into_a_hidden_thread(team: Team) -> None:
    thread = _hidden_thread(team)
    answer = answer_of(post(team.token(team.alpha, "ingest", "admin"), _more_of_conv_h()))
    assert not answer.HasField("partial_success")
    assert Message.objects.filter(thread=thread, role="user").count() == 2


def test_a_plain_span_is_not_refused(team: Team) -> None:
    plain = span(trace=GOOD_TRACE, span_id="00000000000000dd", attributes={"k": "v"})
    answer = answer_of(post(team.token(team.alpha), request(plain).SerializeToString()))
    assert not answer.HasField("partial_success")
