"""OTLP receiver throughput: LLM-call spans/s into the message tree, against the event API.

Builds --conversations conversations of --turns turns (each turn one `chat` span whose input
is the whole history so far, as Pydantic AI sends it), posts them to
`/api/v1/otlp/v1/traces` as protobuf in batches of --batch spans, and prints spans/s and new
messages/s. The baseline, measured in the same run on the same database, stores the same
messages through the event API (a run per turn: `POST /threads/{id}/runs`, `POST
/runs/{id}/events` with `message` events, `POST /runs/{id}/commit`). Then the same spans are
sent again (an exporter's retry) and must add nothing. In-process (Django's test client), so
the figures are the server's work without a network.

    .venv/bin/python bench/bench_otlp.py [--conversations 50] [--turns 10] [--batch 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import setup_django

SECOND = 1_000_000_000
T0 = 1_790_000_000 * SECOND


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _conversations(
    count: int, turns: int
) -> list[list[tuple[list[dict[str, Any]], dict[str, Any]]]]:
    """Each conversation as its turns: (input history, answer)."""
    out = []
    for c in range(count):
        history: list[dict[str, Any]] = []
        calls = []
        for t in range(turns):
            history.append(_text("user", f"Question {t} of conversation {c}: what about item {t}?"))
            answer = _text("assistant", f"Answer {t} of conversation {c}. " + "words " * 40)
            calls.append((list(history), answer))
            history.append(answer)
        out.append(calls)
    return out


def _spans(conversations: list[list[tuple[list[dict[str, Any]], dict[str, Any]]]]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    spans = []
    for c, calls in enumerate(conversations):
        for t, (inputs, answer) in enumerate(calls):
            start = T0 + (c * 1000 + t) * SECOND
            span = Span(
                trace_id=(c * 1000 + t + 1).to_bytes(16, "big"),
                span_id=(c * 1000 + t + 1).to_bytes(8, "big"),
                name="chat gpt-4o",
                kind=Span.SPAN_KIND_CLIENT,
                start_time_unix_nano=start,
                end_time_unix_nano=start + SECOND // 2,
            )
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.conversation.id": f"bench-{c}",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps([answer]),
            }
            span.attributes.extend(
                KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attributes.items()
            )
            span.attributes.append(
                KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=100))
            )
            spans.append(span)
    return spans


def _bodies(spans: list[Any], batch: int) -> list[bytes]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    bodies = []
    for start in range(0, len(spans), batch):
        export = ExportTraceServiceRequest()
        scope = export.resource_spans.add().scope_spans.add()
        scope.scope.name = "pydantic-ai"
        scope.spans.extend(spans[start : start + batch])
        bodies.append(export.SerializeToString())
    return bodies


def _otlp(client: Any, token: str, bodies: list[bytes]) -> float:
    started = time.perf_counter()
    for body in bodies:
        response = client.post(
            "/api/v1/otlp/v1/traces",
            body,
            content_type="application/x-protobuf",
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.content
    return time.perf_counter() - started


def _event_api(client: Any, token: str, conversations: list[Any]) -> tuple[float, int]:
    """The same turns through the event API; returns the time and the messages written."""
    headers = {"Authorization": f"Bearer {token}"}

    def post(path: str, body: Any) -> Any:
        response = client.post(
            "/api/v1" + path, json.dumps(body), content_type="application/json", headers=headers
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    def message(entry: dict[str, Any]) -> dict[str, Any]:
        parts = [{"type": "text", "text": p["content"]} for p in entry["parts"]]
        return {"role": entry["role"], "parts": parts}

    written = 0
    started = time.perf_counter()
    for calls in conversations:
        thread = post("/threads", {"title": "bench"})
        for inputs, answer in calls:
            run = post(f"/threads/{thread['id']}/runs", {})
            events = [
                {"seq": 1, "kind": "message", "data": message(inputs[-1])},
                {"seq": 2, "kind": "message", "data": message(answer)},
            ]
            post(f"/runs/{run['id']}/events", {"events": events})
            post(f"/runs/{run['id']}/commit", {})
            written += 2
    return time.perf_counter() - started, written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    setup_django(durable=True)
    from django.test import Client
    from django.test.utils import setup_test_environment

    from transcripts.ledger.default_project import default_project
    from transcripts.ledger.tokens import issue_token
    from transcripts.models import Message

    setup_test_environment()  # the test client's host name is allowed
    project = default_project()
    token = issue_token(project=project, name="bench", scopes=["ingest", "read"])[1]
    client = Client()
    conversations = _conversations(args.conversations, args.turns)
    spans = _spans(conversations)
    bodies = _bodies(spans, args.batch)

    before = Message.objects.count()
    otlp_seconds = _otlp(client, token, bodies)
    messages = Message.objects.count() - before
    retry_seconds = _otlp(client, token, bodies)
    assert Message.objects.count() - before == messages, "a re-sent export wrote messages"
    api_seconds, api_messages = _event_api(client, token, conversations)

    otlp_rate = messages / otlp_seconds
    api_rate = api_messages / api_seconds
    print(f"spans: {len(spans)} in {len(bodies)} requests of {args.batch}")
    print(f"OTLP receiver:  {len(spans) / otlp_seconds:8.0f} spans/s, {otlp_rate:8.0f} messages/s")
    print(f"re-sent export: {len(spans) / retry_seconds:8.0f} spans/s, 0 messages written")
    print(f"event API:      {api_rate:8.0f} messages/s (a run per turn, same messages)")
    print(f"ratio OTLP / event API (messages/s): {otlp_rate / api_rate:.2f}")
    figure("OTLP receiver, LLM-call spans", len(spans) / otlp_seconds, "spans/s")
    figure(
        "OTLP receiver, new messages",
        otlp_rate,
        "messages/s",
        baseline=("event API, same messages", api_rate),
    )
    figure("re-sent OTLP export (writes nothing)", len(spans) / retry_seconds, "spans/s")


if __name__ == "__main__":
    main()
