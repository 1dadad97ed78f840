"""OTLP/HTTP log bodies (protobuf or OTLP JSON) into `LogEvent`s, with the official classes.

Only events are read: a log record's event name is its `event_name` field, else its
`event.name` attribute (the older way); a record without one is an event named "".
"""

from __future__ import annotations

import binascii
from collections.abc import Iterator
from dataclasses import dataclass

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)

from transcripts.formats.otlp.decode import attributes, encode_message, parse_into
from transcripts.formats.otlp.model import Attributes

EVENT_NAME_KEY = "event.name"


@dataclass(frozen=True)
class LogEvent:
    """One log record: where it is in the request (from 0), its event name, the span it was
    emitted in (lowercase hex, "" for none), its time and its attributes."""

    index: int
    event_name: str
    trace_id: str
    span_id: str
    time_ns: int
    attributes: Attributes


def parse_logs(body: bytes, content_type: str) -> ExportLogsServiceRequest:
    """The logs request of a body in content_type (protobuf or JSON), or UndecodableBody."""
    return parse_into(body, content_type, ExportLogsServiceRequest(), "resourceLogs")


def record_count(request: ExportLogsServiceRequest) -> int:
    """How many log records the request holds."""
    scopes = (scope for resource in request.resource_logs for scope in resource.scope_logs)
    return sum(len(scope.log_records) for scope in scopes)


def log_events_of(request: ExportLogsServiceRequest) -> Iterator[LogEvent]:
    """Every log record of the request, decoded, in order.

    The time is the record's time, else the time it was observed (both survive a re-export).
    """
    index = 0
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                values = attributes(record.attributes)
                named = values.get(EVENT_NAME_KEY)
                yield LogEvent(
                    index=index,
                    event_name=record.event_name or (named if isinstance(named, str) else ""),
                    trace_id=binascii.hexlify(record.trace_id).decode(),
                    span_id=binascii.hexlify(record.span_id).decode(),
                    time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                    attributes=values,
                )
                index += 1


def encode_logs_response(content_type: str, *, rejected: int = 0, error_message: str = "") -> bytes:
    """An ExportLogsServiceResponse in content_type; partial_success only when something was."""
    response = ExportLogsServiceResponse()
    if rejected or error_message:
        response.partial_success.rejected_log_records = rejected
        response.partial_success.error_message = error_message
    return encode_message(response, content_type)
