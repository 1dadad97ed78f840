"""OTLP/HTTP trace bodies (protobuf or OTLP JSON) into `SpanData`, with the official classes."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from transcripts.formats.otlp.model import Attributes, AttributeValue, SpanData, SpanEvent
from transcripts.jsonvalue import JsonObject, JsonValue

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# OTLP JSON writes these ids in hex where protobuf's JSON mapping expects base64.
M = TypeVar("M", bound=Message)
_HEX_ID_KEYS = frozenset(
    {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}
)


class UndecodableBody(Exception):
    """The body is not the OTLP request expected, in the declared encoding."""


def _hex_ids_to_base64(value: JsonValue) -> JsonValue:
    """A copy of OTLP JSON with its hex span and trace ids in base64, as json_format reads them."""
    if isinstance(value, list):
        return [_hex_ids_to_base64(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: JsonObject = {}
    for key, item in value.items():
        if key in _HEX_ID_KEYS and isinstance(item, str):
            try:
                item = base64.b64encode(bytes.fromhex(item)).decode() if item else ""
            except ValueError:
                raise UndecodableBody(f"{key} must be a hex string, not {item[:40]!r}") from None
        out[key] = _hex_ids_to_base64(item)
    return out


def parse_into(body: bytes, content_type: str, message: M, top: str) -> M:
    """message filled from a body in content_type (protobuf, or OTLP JSON whose top-level list
    is top), or UndecodableBody."""
    name = type(message).__name__
    if content_type == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise UndecodableBody(f"not an {name}: {exc}") from None
        return message
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UndecodableBody(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise UndecodableBody(f"an OTLP JSON body is an object with {top}")
    try:
        json_format.ParseDict(_hex_ids_to_base64(document), message, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise UndecodableBody(f"not OTLP JSON: {exc}") from None
    return message


def parse_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """The request message of a body in content_type (protobuf or JSON), or UndecodableBody."""
    return parse_into(body, content_type, ExportTraceServiceRequest(), "resourceSpans")


def encode_message(message: Message, content_type: str) -> bytes:
    """message in content_type: protobuf, or OTLP JSON."""
    if content_type == PROTOBUF:
        encoded: bytes = message.SerializeToString()
        return encoded
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()


def encode_response(content_type: str, *, rejected: int = 0, error_message: str = "") -> bytes:
    """An ExportTraceServiceResponse in content_type; partial_success only when something was."""
    response = ExportTraceServiceResponse()
    if rejected or error_message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = error_message
    return encode_message(response, content_type)


def any_value(value: AnyValue) -> AttributeValue:
    """An AnyValue as a plain Python value (kvlist: dict, array: list, bytes kept as bytes)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    plain: str | bool | int | float | bytes = getattr(value, kind)
    return plain


def attributes(pairs: Iterable[KeyValue]) -> dict[str, AttributeValue]:
    """Key-values as a dict (a repeated key: the last one wins, as in the SDKs)."""
    return {pair.key: any_value(pair.value) for pair in pairs}


def _hex(raw: bytes) -> str:
    return binascii.hexlify(raw).decode()


def spans_of(request: ExportTraceServiceRequest) -> Iterator[SpanData]:
    """Every span of the request, decoded, with its resource's attributes and scope name."""
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                yield SpanData(
                    trace_id=_hex(span.trace_id),
                    span_id=_hex(span.span_id),
                    parent_span_id=_hex(span.parent_span_id) or None,
                    name=span.name,
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=attributes(span.attributes),
                    events=tuple(
                        SpanEvent(
                            name=event.name,
                            time_ns=event.time_unix_nano,
                            attributes=attributes(event.attributes),
                        )
                        for event in span.events
                    ),
                    status_code=int(span.status.code),
                    status_message=span.status.message,
                    resource=resource,
                    scope=scope,
                )


def _value_problem(value: AttributeValue | Attributes, where: str) -> str | None:
    """Why value cannot be stored (a NUL, a lone surrogate, NaN or infinity), else None."""
    if isinstance(value, str):
        if "\x00" in value:
            return f"{where} holds a NUL character (\\u0000), which cannot be stored"
        if not value.isascii():
            try:
                value.encode()
            except UnicodeEncodeError:
                return f"{where} is not valid Unicode (a lone surrogate)"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value}: NaN and infinity cannot be stored"
    if isinstance(value, Mapping):
        return _attributes_problem(value, where)
    if isinstance(value, list):
        found = (_value_problem(item, f"{where}[{i}]") for i, item in enumerate(value))
        return next((problem for problem in found if problem), None)
    return None


def _attributes_problem(values: Attributes, where: str) -> str | None:
    """The first problem of values' keys and values, else None."""
    for key, value in values.items():
        problem = _value_problem(key, f"an attribute key of {where}") or _value_problem(
            value, f"{where}.{key}"
        )
        if problem:
            return problem
    return None


def attributes_problem(values: Attributes, where: str) -> str | None:
    """Why values cannot be stored (a NUL, a lone surrogate, NaN or infinity), else None."""
    return _attributes_problem(values, where)


def unstorable(span: SpanData) -> str | None:
    """Why span cannot be stored (a NUL or a lone surrogate in any of its texts, NaN or
    infinity in any of its numbers), else None: the span is refused by itself."""
    checks: list[tuple[AttributeValue | Attributes, str]] = [
        (span.name, "the span name"),
        (span.status_message, "the status message"),
        (span.scope, "the scope name"),
        (span.attributes, "attributes"),
        (span.resource, "resource attributes"),
    ]
    for index, event in enumerate(span.events):
        checks += [(event.name, f"events[{index}].name"), (event.attributes, f"events[{index}]")]
    found = (_value_problem(value, where) for value, where in checks)
    return next((problem for problem in found if problem), None)
