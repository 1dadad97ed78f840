"""The OTLP/HTTP traces receiver: `OTEL_EXPORTER_OTLP_ENDPOINT=http://HOST/api/v1/otlp`.

Answers as the OTLP specification says: 200 with an `ExportTraceServiceResponse` in the
request's encoding (with `partial_success` naming the spans refused), 400 for a body that is
not a request, 413 past `TRANSCRIPTS_OTLP_MAX_BYTES` (compressed or not), 415 for another
content type or encoding, 429 with Retry-After (and a `RetryInfo` in the `google.rpc.Status`)
past the caller's quota of requests or spans a minute (docs/access.md). Refusals of protobuf
requests carry a `google.rpc.Status`, those of JSON requests the API's error shape.
"""

from __future__ import annotations

import zlib

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from google.rpc import status_pb2
from ninja import Router
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from transcripts.api.access import append_reach, caller_project, require_scope
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
from transcripts.limits import charge_events
from transcripts.otel.ingest import ingest_spans
from transcripts.permissions import INGEST

router = Router(auth=ingest_auth)  # mounted at /otlp

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


# Outside the OpenAPI schema: its bodies are OTLP protobuf or OTLP JSON, specified by
# OpenTelemetry (docs/otel.md), not JSON objects of this API.
@router.post("/v1/traces", include_in_schema=False)
def export_traces(request: HttpRequest) -> HttpResponse:
    """Receive OTLP/HTTP trace spans (protobuf or JSON, gzip or not) into threads."""
    require_scope(request, INGEST)
    content_type = request.content_type or ""
    try:
        if content_type not in (PROTOBUF, JSON):
            raise _Refused(
                415,
                "unsupported_media_type",
                f"send {PROTOBUF} or {JSON}, not {content_type or 'no content type'}",
            )
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("gzip", "identity", ""):
            raise _Refused(
                415, "unsupported_media_type", f"unsupported Content-Encoding {encoding}"
            )
        limit = max_bytes()
        body = _read(request, limit)
        if encoding == "gzip":
            body = _gunzip(body, limit)
        try:
            export = parse_request(body, content_type)
        except UndecodableBody as exc:
            raise _Refused(400, "bad_request", str(exc)) from None
    except _Refused as exc:
        return _refusal(exc, content_type)
    # The spans count against the events a minute (429 with RetryInfo past them).
    charge_events(request, _span_count(export))
    result = ingest_spans(
        project=caller_project(request),
        spans=spans_of(export),
        within=append_reach(request, needs=[INGEST]),
    )
    answer = encode_response(
        content_type, rejected=len(result.rejected), error_message=result.error_message
    )
    return HttpResponse(answer, status=200, content_type=content_type)
