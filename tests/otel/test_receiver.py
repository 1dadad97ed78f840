"""The OTLP/HTTP receiver: encodings, refusals, tokens and projects, partial success."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from django.test import Client
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.base import Team
from tests.otel.spans import chat, otlp_json, request, text
from transcripts.models import Message, Run, Thread

URL = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"
TRACE = "5b8efff798038103d269b633813fc60c"
pytestmark = pytest.mark.django_db


def post(token: str | None, body: bytes, content_type: str = PROTOBUF, **headers: str) -> Any:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return Client().post(URL, body, content_type=content_type, headers=headers)


def one_turn(conversation: str = "conv-1") -> bytes:
    span = chat(
        trace=TRACE,
        span_id="eee19b7ec3c1b174",
        inputs=[text("user", "Weather in Paris?")],
        outputs=[text("assistant", "Sunny.")],
        conversation=conversation,
    )
    return request(span).SerializeToString()


def path_of(thread: Thread) -> list[tuple[str, str]]:
    rows = Message.objects.filter(thread=thread, active=True).order_by("depth")
    return [(m.role, m.parts[0].get("text", m.parts[0]["type"])) for m in rows]


def test_it_stores_a_protobuf_export_as_a_thread(team: Team) -> None:
    response = post(team.token(team.alpha, "ingest"), one_turn())
    assert response.status_code == 200
    assert response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")
    thread = Thread.objects.get(external_id="conv-1")
    assert thread.project == team.alpha
    assert thread.title == "Weather in Paris?"
    assert path_of(thread) == [
        ("system", "Be brief."),
        ("user", "Weather in Paris?"),
        ("assistant", "Sunny."),
    ]
    answer_message = Message.objects.get(thread=thread, role="assistant")
    assert answer_message.metadata["model"] == "gpt-4o-2024"
    assert answer_message.metadata["provider"] == "openai"
    assert answer_message.metadata["usage"] == {"inputTokens": 10, "outputTokens": 5}
    assert answer_message.metadata["finishReason"] == "stop"
    assert answer_message.metadata["otel"]["spanId"] == "eee19b7ec3c1b174"
    run = Run.objects.get(thread=thread)
    assert (run.status, run.generator, run.usage) == (
        "committed",
        "otel",
        {"inputTokens": 10, "outputTokens": 5},
    )


def test_it_reads_otlp_json_with_hex_ids_and_answers_json(team: Team) -> None:
    export = request(
        chat(
            trace=TRACE,
            span_id="eee19b7ec3c1b174",
            inputs=[text("user", "Hi")],
            outputs=[text("assistant", "Hello")],
        )
    )
    response = post(team.token(team.alpha), otlp_json(export), "application/json")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    json_format.Parse(response.content, ExportTraceServiceResponse())
    # Without a conversation id, the trace id (in hex, as sent) names the thread.
    thread = Thread.objects.get(external_id=TRACE)
    assert path_of(thread)[1:] == [("user", "Hi"), ("assistant", "Hello")]


def test_it_inflates_gzip_bodies(team: Team) -> None:
    response = post(
        team.token(team.alpha), gzip.compress(one_turn()), **{"Content-Encoding": "gzip"}
    )
    assert response.status_code == 200
    assert Thread.objects.filter(external_id="conv-1").exists()


def test_it_refuses_a_body_that_is_not_a_request(team: Team) -> None:
    response = post(team.token(team.alpha), b"\xff\xff\xff\xff not protobuf")
    assert response.status_code == 400
    status = status_pb2.Status.FromString(response.content)
    assert "ExportTraceServiceRequest" in status.message
    response = post(team.token(team.alpha), b"{not json", "application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    assert not Thread.objects.exists()


def test_it_refuses_other_content_types_and_encodings(team: Team) -> None:
    token = team.token(team.alpha)
    assert post(token, one_turn(), "text/plain").status_code == 415
    assert post(token, one_turn(), **{"Content-Encoding": "br"}).status_code == 415
    assert not Thread.objects.exists()


def test_it_refuses_a_20_mb_body(team: Team) -> None:
    response = post(team.token(team.alpha), b"\0" * (20 * 1024 * 1024))
    assert response.status_code == 413


def test_it_does_not_inflate_a_gzip_bomb_past_the_limit(team: Team, settings: Any) -> None:
    settings.TRANSCRIPTS_OTLP_MAX_BYTES = 1024 * 1024
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))
    assert len(bomb) < 100 * 1024
    response = post(team.token(team.alpha), bomb, **{"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert status_pb2.Status.FromString(response.content).message.startswith("the body is larger")


def test_it_requires_a_token_with_the_ingest_scope(team: Team) -> None:
    assert post(None, one_turn()).status_code == 401
    assert post("not-a-token", one_turn()).status_code == 401
    assert post(team.token(team.alpha, "read"), one_turn()).status_code == 403
    assert not Thread.objects.exists()


def test_a_token_of_beta_writes_into_beta_only(team: Team) -> None:
    assert post(team.token(team.alpha), one_turn()).status_code == 200
    assert post(team.token(team.beta), one_turn()).status_code == 200
    alpha, beta = Thread.objects.get(project=team.alpha), Thread.objects.get(project=team.beta)
    assert alpha.external_id == beta.external_id == "conv-1"
    assert alpha.pk != beta.pk
    assert Message.objects.filter(thread=beta).count() == 3


def test_partial_success_names_the_spans_refused_and_the_rest_are_stored(team: Team) -> None:
    good = chat(
        trace=TRACE,
        span_id="0000000000000001",
        inputs=[text("user", "Hi")],
        outputs=[text("assistant", "Hello")],
        conversation="good",
    )
    bad = chat(
        trace="ffffffffffffffffffffffffffffffff",
        span_id="00000000000000bb",
        inputs=[],
        outputs=[],
        conversation="bad",
        extra={"gen_ai.input.messages": "[{not json"},
    )
    response = post(team.token(team.alpha), request(good, bad).SerializeToString())
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert "span 00000000000000bb: gen_ai.input.messages is not valid JSON" in (
        answer.partial_success.error_message
    )
    assert list(Thread.objects.values_list("external_id", flat=True)) == ["good"]


def test_content_postgresql_cannot_store_is_refused_without_a_trace(team: Team) -> None:
    bad = chat(
        trace=TRACE,
        span_id="00000000000000cc",
        inputs=[text("user", "nul \u0000 here")],
        outputs=[text("assistant", "x")],
        conversation="nul",
    )
    response = post(team.token(team.alpha), request(bad).SerializeToString())
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 1
    assert "00000000000000cc" in answer.partial_success.error_message
    assert not Thread.objects.exists()


def test_threads_are_found_by_external_id(team: Team) -> None:
    post(team.token(team.alpha), one_turn("conv-a"))
    post(team.token(team.alpha), one_turn("conv-b"))
    post(team.token(team.beta), one_turn("conv-a"))
    client = Client()
    headers = {"Authorization": f"Bearer {team.token(team.alpha, 'read')}"}
    body = client.get("/api/v1/threads", {"externalId": "conv-a"}, headers=headers).json()
    assert [t["externalId"] for t in body["threads"]] == ["conv-a"]
    assert (
        body["threads"][0]["id"] == Thread.objects.get(project=team.alpha, external_id="conv-a").id
    )
    body = client.get("/api/v1/threads", {"externalId": "nope"}, headers=headers).json()
    assert body["threads"] == []


def test_bodies_past_the_api_s_general_limit_are_read_up_to_the_otlp_limit(
    team: Team, settings: Any
) -> None:
    settings.TRANSCRIPTS_MAX_BODY_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    long_question = "word " * (300 * 1024)  # 1.5 MB of text in one span
    span = chat(
        trace=TRACE,
        span_id="eee19b7ec3c1b174",
        inputs=[text("user", long_question)],
        outputs=[text("assistant", "Short answer.")],
        conversation="long",
    )
    body = request(span).SerializeToString()
    assert len(body) > settings.TRANSCRIPTS_MAX_BODY_BYTES
    response = post(team.token(team.alpha), body)
    assert response.status_code == 200
    assert Message.objects.filter(thread__external_id="long").count() == 3
