"""The OTLP/HTTP receiver of traces and logs: `OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST/api/v1/otlp`.

Spans become threads, and `gen_ai.evaluation.result` events (on spans, or as log records)
scores (docs/otel.md). Answers as the OTLP specification says: 200 with an
`ExportTraceServiceResponse` (`ExportLogsServiceResponse`) in the request's encoding (with
`partial_success` naming the spans or records refused), 400 for a body that is not a request,
413 past `TRANSCRIPTS_OTLP_MAX_BYTES` (compressed or not), 415 for another content type or
encoding, 429 with Retry-After (and a `RetryInfo` in the `google.rpc.Status`) past the
caller's quota of requests or events (spans, log records) a minute (docs/access.md). Refusals
of protobuf requests carry a `google.rpc.Status`, those of JSON requests the API's error shape.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from google.protobuf.message import Message
from google.rpc import status_pb2
from ninja import Router
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from transcripts.api.access import append_reach, caller, caller_project, require_scope
from transcripts.api.auth import ingest_auth
from transcripts.api.errors import error_response
from transcripts.formats.otlp.decode import (
    JSON,
    PROTOBUF,
    UndecodableBody,
    encode_response,
    parse_request,
    spans_of,
)
from transcripts.formats.otlp.logs import (
    encode_logs_response,
    log_events_of,
    parse_logs,
    record_count,
)
from transcripts.ledger.scores import Author
from transcripts.limits import charge_events
from transcripts.otel.evaluations import score_log_events, score_span_events
from transcripts.otel.ingest import ingest_spans
from transcripts.permissions import INGEST

router = Router(auth=ingest_auth)  # mounted at /otlp
M = TypeVar("M", bound=Message)

# google.rpc.Code of each refusal.
_RPC_CODES = {400: 3, 413: 8, 415: 3}  # INVALID_ARGUMENT, RESOURCE_EXHAUSTED


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def max_bytes() -> int:
    """The largest body accepted, before and after decompression."""
    return int(settings.TRANSCRIPTS_OTLP_MAX_BYTES)


def _too_large(limit: int) -> _Refused:
    return _Refused(413, "too_large", f"the body is larger than {limit} bytes")


def _read(request: HttpRequest, limit: int) -> bytes:
    """The body as sent, refused past limit (announced or actual size)."""
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    # read(), not .body: the API's general body limit is smaller than this one.
    body = request.read(limit + 1)
    if len(body) > limit:
        raise _too_large(limit)
    return body


def _gunzip(body: bytes, limit: int) -> bytes:
    """The inflated body, never inflating more than limit bytes (a gzip bomb stops there)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise _Refused(400, "bad_request", f"the gzip body cannot be inflated: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large(limit)
    if not inflater.eof:
        raise _Refused(400, "bad_request", "the gzip body is truncated")
    return out


def _refusal(exc: _Refused, content_type: str) -> HttpResponse:
    if content_type == PROTOBUF:
        status = status_pb2.Status(code=_RPC_CODES.get(exc.status, 3), message=exc.message)
        return HttpResponse(status.SerializeToString(), status=exc.status, content_type=PROTOBUF)
    return error_response(exc.status, exc.code, exc.message)


def _span_count(export: ExportTraceServiceRequest) -> int:
    """How many spans the export holds."""
    return sum(
        len(scope.spans) for resource in export.resource_spans for scope in resource.scope_spans
    )


def _body(request: HttpRequest) -> bytes:
    """The request's body, inflated, or _Refused: a content type other than OTLP's (415),
    another encoding (415), past the size limit (413), a broken gzip stream (400)."""
    content_type = request.content_type or ""
    if content_type not in (PROTOBUF, JSON):
        raise _Refused(
            415,
            "unsupported_media_type",
            f"send {PROTOBUF} or {JSON}, not {content_type or 'no content type'}",
        )
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise _Refused(415, "unsupported_media_type", f"unsupported Content-Encoding {encoding}")
    limit = max_bytes()
    body = _read(request, limit)
    return _gunzip(body, limit) if encoding == "gzip" else body


def _parsed(request: HttpRequest, parse: Callable[[bytes, str], M]) -> M:
    """The request's OTLP message, read by parse, or _Refused (400 for what is not one)."""
    body = _body(request)
    try:
        return parse(body, request.content_type or "")
    except UndecodableBody as exc:
        raise _Refused(400, "bad_request", str(exc)) from None


def _author(request: HttpRequest) -> Author:
    """The calling token, as the author of the scores it sends."""
    principal = caller(request)
    return Author(token_id=principal.token_id, token_name=principal.name)


def _joined(*messages: str) -> str:
    """The non-empty messages, one after the other."""
    return "; ".join(message for message in messages if message)


# Outside the OpenAPI schema: its bodies are OTLP protobuf or OTLP JSON, specified by
# OpenTelemetry (docs/otel.md), not JSON objects of this API.
@router.post("/v1/traces", include_in_schema=False)
def export_traces(request: HttpRequest) -> HttpResponse:
    """Receive OTLP/HTTP trace spans (protobuf or JSON, gzip or not) into threads, and their
    evaluation events as scores."""
    require_scope(request, INGEST)
    content_type = request.content_type or ""
    try:
        export = _parsed(request, parse_request)
    except _Refused as exc:
        return _refusal(exc, content_type)
    # The spans count against the events a minute (429 with RetryInfo past them).
    charge_events(request, _span_count(export))
    project, within = caller_project(request), append_reach(request, needs=[INGEST])
    spans = list(spans_of(export))
    result = ingest_spans(project=project, spans=spans, within=within)
    refused = {span_id for span_id, _ in result.rejected}
    scores = score_span_events(
        project=project,
        spans=[span for span in spans if span.span_id not in refused],
        author=_author(request),
        within=within,
    )
    # A refused evaluation event is a warning: its span is stored, so it is not counted.
    answer = encode_response(
        content_type,
        rejected=len(result.rejected),
        error_message=_joined(result.error_message, scores.error_message),
    )
    return HttpResponse(answer, status=200, content_type=content_type)


@router.post("/v1/logs", include_in_schema=False)
def export_logs(request: HttpRequest) -> HttpResponse:
    """Receive OTLP/HTTP log records (protobuf or JSON, gzip or not): their evaluation events
    become scores; other records are accepted and not stored."""
    require_scope(request, INGEST)
    content_type = request.content_type or ""
    try:
        export = _parsed(request, parse_logs)
    except _Refused as exc:
        return _refusal(exc, content_type)
    # The records count against the events a minute, as spans do.
    charge_events(request, record_count(export))
    scores = score_log_events(
        project=caller_project(request),
        records=log_events_of(export),
        author=_author(request),
        within=append_reach(request, needs=[INGEST]),
    )
    answer = encode_logs_response(
        content_type, rejected=len(scores.rejected), error_message=scores.error_message
    )
    return HttpResponse(answer, status=200, content_type=content_type)
