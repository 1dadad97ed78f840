"""Building `gen_ai.evaluation.result` events (span events, OTLP log records) and posting them
to the receiver, for the tests of evaluations as scores."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from django.test import Client
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.otel.spans import SECOND, T0, any_value, chat, request, text

TRACES = "/api/v1/otlp/v1/traces"
LOGS = "/api/v1/otlp/v1/logs"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
EVENT = "gen_ai.evaluation.result"
TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"


def evaluation(
    name: str = "helpfulness",
    value: float | None = 4.0,
    label: str | None = None,
    explanation: str | None = "Answers the question.",
    **extra: Any,
) -> dict[str, Any]:
    """The attributes of an evaluation result (extra: more attributes, dots as __)."""
    values: dict[str, Any] = {"gen_ai.evaluation.name": name}
    if value is not None:
        values["gen_ai.evaluation.score.value"] = value
    if label is not None:
        values["gen_ai.evaluation.score.label"] = label
    if explanation is not None:
        values["gen_ai.evaluation.explanation"] = explanation
    values.update({key.replace("__", "."): item for key, item in extra.items()})
    return values


def _key_values(values: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=key, value=any_value(item)) for key, item in values.items()]


def with_event(span: Span, values: Mapping[str, Any], *, at: int = T0 + 2 * SECOND) -> Span:
    """span with an evaluation result event at time at."""
    event = span.events.add()
    event.name, event.time_unix_nano = EVENT, at
    event.attributes.extend(_key_values(values))
    return span


def answer_span(
    *,
    span_id: str = SPAN,
    trace: str = TRACE,
    conversation: str = "conv-1",
    question: str = "Weather in Paris?",
    answer: str = "Sunny.",
    start: int = T0,
    response_id: str | None = None,
) -> Span:
    """A chat span asking question and answering answer (with a gen_ai.response.id)."""
    extra = {"gen_ai.response.id": response_id} if response_id else {}
    return chat(
        trace=trace,
        span_id=span_id,
        inputs=[text("user", question)],
        outputs=[text("assistant", answer)],
        conversation=conversation,
        start=start,
        extra=extra,
    )


def record(
    values: Mapping[str, Any],
    *,
    trace: str = "",
    span_id: str = "",
    at: int = T0 + 3 * SECOND,
    event_name: str = EVENT,
    as_attribute: bool = False,
) -> LogRecord:
    """A log record of an event (named in event_name, or in the event.name attribute)."""
    out = LogRecord(
        time_unix_nano=at,
        observed_time_unix_nano=at,
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex(span_id),
        severity_number=9,
    )
    if as_attribute:
        values = {"event.name": event_name, **values}
    else:
        out.event_name = event_name
    out.attributes.extend(_key_values(values))
    return out


def logs(*records: LogRecord) -> ExportLogsServiceRequest:
    """A logs export holding records under one resource and scope."""
    export = ExportLogsServiceRequest()
    scope_logs = export.resource_logs.add().scope_logs.add()
    scope_logs.scope.name = "evaluator"
    scope_logs.log_records.extend(records)
    return export


def logs_json(export: ExportLogsServiceRequest) -> bytes:
    """The logs export as OTLP JSON, ids in hex."""
    document = json_format.MessageToDict(export)
    for resource in document.get("resourceLogs", []):
        for scope in resource.get("scopeLogs", []):
            for item in scope.get("logRecords", []):
                for key in ("traceId", "spanId"):
                    if key in item:
                        item[key] = base64.b64decode(item[key]).hex()
    return json.dumps(document).encode()


def post(
    url: str, token: str | None, body: bytes, content_type: str = PROTOBUF, **headers: str
) -> Any:
    """Post body to url with token (none: no Authorization header)."""
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return Client().post(url, body, content_type=content_type, headers=headers)


def send_spans(token: str, *spans: Span) -> ExportTraceServiceResponse:
    """Post spans as protobuf; the receiver's answer (a 200 expected)."""
    response = post(TRACES, token, request(*spans).SerializeToString())
    assert response.status_code == 200, response.content
    return ExportTraceServiceResponse.FromString(response.content)


def send_logs(token: str, *records: LogRecord) -> ExportLogsServiceResponse:
    """Post log records as protobuf; the receiver's answer (a 200 expected)."""
    response = post(LOGS, token, logs(*records).SerializeToString())
    assert response.status_code == 200, response.content
    return ExportLogsServiceResponse.FromString(response.content)
