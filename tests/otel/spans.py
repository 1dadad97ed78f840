"""Building OTLP requests with the official classes, for the receiver's tests."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

SECOND = 1_000_000_000
T0 = 1_790_000_000 * SECOND


def any_value(value: Any) -> AnyValue:
    """A Python value as an AnyValue."""
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, Mapping):
        out = AnyValue()
        out.kvlist_value.values.extend(
            KeyValue(key=k, value=any_value(v)) for k, v in value.items()
        )
        return out
    return AnyValue(string_value=str(value))


def span(
    *,
    trace: str,
    span_id: str,
    name: str = "chat model",
    parent: str = "",
    start: int = T0,
    end: int | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Span:
    """A span with hex ids and attributes."""
    out = Span(
        trace_id=bytes.fromhex(trace),
        span_id=bytes.fromhex(span_id),
        parent_span_id=bytes.fromhex(parent),
        name=name,
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=start,
        end_time_unix_nano=end if end is not None else start + SECOND,
    )
    out.attributes.extend(
        KeyValue(key=k, value=any_value(v)) for k, v in (attributes or {}).items()
    )
    return out


def request(*spans: Span) -> ExportTraceServiceRequest:
    """An export request holding spans under one resource and the pydantic-ai scope."""
    export = ExportTraceServiceRequest()
    resource_spans = export.resource_spans.add()
    resource_spans.resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value="tests"))
    )
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "pydantic-ai"
    scope_spans.spans.extend(spans)
    return export


def otlp_json(export: ExportTraceServiceRequest) -> bytes:
    """The request as OTLP JSON: protobuf's JSON mapping with the ids in hex, as the spec says."""
    document = json_format.MessageToDict(export)

    def hex_ids(value: Any) -> Any:
        if isinstance(value, list):
            return [hex_ids(v) for v in value]
        if isinstance(value, dict):
            return {
                k: (
                    base64.b64decode(v).hex()
                    if k in ("traceId", "spanId", "parentSpanId")
                    else hex_ids(v)
                )
                for k, v in value.items()
            }
        return value

    return json.dumps(hex_ids(document)).encode()


def text(role: str, content: str) -> dict[str, Any]:
    """A semconv message with one text part."""
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def chat(
    *,
    trace: str,
    span_id: str,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    start: int = T0,
    conversation: str | None = None,
    parent: str = "",
    extra: Mapping[str, Any] | None = None,
) -> Span:
    """A `chat` span as Pydantic AI writes it (format 2 and later)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.response.finish_reasons": ["stop"],
    }
    if conversation is not None:
        attributes["gen_ai.conversation.id"] = conversation
    attributes.update(extra or {})
    return span(
        trace=trace,
        span_id=span_id,
        name="chat gpt-4o",
        parent=parent,
        start=start,
        attributes=attributes,
    )
