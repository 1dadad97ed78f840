"""The API's answers in the one JSON error shape (`json_errors.error_body`), its handlers,
and the request checks (content type, body size, JSON depth, text PostgreSQL can store, batch
length) behind some refusals."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import Error as DatabaseLayerError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.datastructures import MultiValueDict
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError
from ninja.parser import Parser

from transcripts.api.schemas import ErrorOut
from transcripts.db_availability import is_outage, is_recovery_conflict
from transcripts.errors import (
    BodyTooLarge,
    DomainError,
    InvalidEvents,
    InvalidInput,
    InvalidJson,
    UnsupportedMediaType,
)
from transcripts.events import max_json_depth, nests_deeper_than, to_storable_json
from transcripts.json_errors import error_body
from transcripts.ledger.quotas import QuotaExceeded
from transcripts.limits import throttled_response
from transcripts.outage import unavailable_response

logger = logging.getLogger("transcripts.api")

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "throttled",
}
# The error responses every endpoint declares (for the OpenAPI schema).
ERRORS: dict[int, type[ErrorOut]] = {
    status: ErrorOut for status in (400, 401, 403, 404, 409, 413, 415, 422, 429)
}
# JSON escapes of what PostgreSQL cannot store: NUL, and UTF-16 surrogates (paired ones are
# fine, and rare enough that finding one only costs a closer look).
# 19 digits in a row may be an integer past 64 bits, which orjson would read as a float: a body
# is mapped to "0" for each digit and " " for anything else, and looked at for 19 zeros (a
# regular expression costs more than parsing the body).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_NUMBER = b"0" * 19
_UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def error_response(
    status: int, code: str, message: str, details: dict[str, object] | None = None
) -> JsonResponse:
    """A JSON error response outside ninja (SSE view, unknown paths)."""
    return JsonResponse(error_body(code, message, details), status=status)


def max_body_bytes() -> int:
    """The configured request body limit."""
    return int(getattr(settings, "TRANSCRIPTS_MAX_BODY_BYTES", 5 * 1024 * 1024))


def read_body(request: HttpRequest) -> bytes:
    """The request body, refused with 413 past the limit (announced or actual size)."""
    limit = max_body_bytes()
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(
            f"the body is larger than {limit} bytes", maxBytes=limit, contentLength=int(declared)
        )
    try:
        body = request.body
    except RequestDataTooBig:
        raise BodyTooLarge(f"the body is larger than {limit} bytes", maxBytes=limit) from None
    if len(body) > limit:
        raise BodyTooLarge(f"the body is larger than {limit} bytes", maxBytes=limit)
    return body


def too_deep() -> InvalidInput:
    """The refusal (422) of JSON nested deeper than the limit."""
    limit = max_json_depth()
    return InvalidInput(
        f"the body nests JSON deeper than {limit} levels", field="body", maxDepth=limit
    )


def check_depth(value: object, body: bytes) -> None:
    """Refuse (422) JSON nested deeper than the limit; bodies too small to be that deep pass."""
    limit = max_json_depth()
    if body.count(b"{") + body.count(b"[") > limit and nests_deeper_than(value, limit):
        raise too_deep()


def check_storable(value: object, path: str) -> None:
    """Refuse (422) a value PostgreSQL cannot store (NUL characters, lone surrogates, NaN),
    naming where it is (path, then the keys and indexes below it)."""
    try:
        to_storable_json(value, path)
    except InvalidEvents as exc:
        problems = [problem.as_dict() for problem in exc.problems]
        first = problems[0]
        raise InvalidInput(f"{first['path']}: {first['message']}", problems=problems) from None


def check_body_storable(value: object, body: bytes) -> None:
    """check_storable for a parsed JSON body, looked at closely only when its text holds an
    escape of something unstorable (NUL and surrogates can only arrive escaped)."""
    if not _UNSTORABLE_ESCAPE.search(body):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            check_storable(key, "body")
            check_storable(item, key)
    else:
        check_storable(value, "body")


def check_content_type(request: HttpRequest, *, also: tuple[str, ...] = ()) -> None:
    """Refuse (415) a body whose declared media type is neither JSON nor one of also; a body
    without a Content-Type is read as JSON."""
    media_type = (request.content_type or "").lower()
    if media_type in ("", "application/json", *also) or media_type.endswith("+json"):
        return
    accepted = ", ".join(("application/json", *also))
    raise UnsupportedMediaType(
        f"a body of type {media_type!r} is not accepted here; send {accepted}",
        contentType=media_type,
        accepted=["application/json", *also],
    )


def check_batch_length(count: int) -> None:
    """Refuse (422) a batch of more events than the configured limit."""
    limit = int(settings.TRANSCRIPTS_MAX_BATCH_EVENTS)
    if count > limit:
        raise InvalidInput(
            f"a batch holds at most {limit} events, not {count}",
            field="events",
            maxEvents=limit,
            events=count,
        )


def parse_json(body: bytes) -> Any:
    """A JSON body as Python values, or the refusal (400, 422) of what cannot be read.

    orjson reads it (several times faster than json on event batches). What orjson refuses,
    Python's parser may take (NaN, lone surrogates, nesting past 1024 levels: each refused
    later as before) or says precisely why not, and orjson reads integers past 64 bits as
    floats: those bodies are read by Python's parser, so every answer stays the same."""
    if _LONG_NUMBER not in body.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(body)
    except RecursionError:  # deeper than Python's parser goes: deeper than the limit
        raise too_deep() from None
    except ValueError as exc:
        raise InvalidJson(f"the body is not valid JSON: {exc}") from None


class JsonBodyParser(Parser):
    """Ninja's JSON parser with the content type, size and depth limits, text PostgreSQL can
    store, and a precise refusal of bad JSON; query parameters get the same text check."""

    # Any: ninja's parser type says a dict; a JSON body may be any JSON value.
    def parse_body(self, request: HttpRequest) -> Any:
        check_content_type(request)
        body = read_body(request)
        value = parse_json(body)
        check_depth(value, body)
        check_body_storable(value, body)
        return value

    def parse_querydict(
        self, data: MultiValueDict[str, str], list_fields: list[str], request: HttpRequest
    ) -> dict[str, object]:
        for key, values in data.lists():
            check_storable(key, "query")
            for value in values:
                check_storable(value, key)
        return super().parse_querydict(data, list_fields, request)


def _location(loc: Iterable[object]) -> str:
    """A pydantic location as a path: ("body", "payload", "events", 0, "seq") → events[0].seq."""
    parts = list(loc)
    if parts and parts[0] == "body":
        parts = parts[2:]
    elif parts and parts[0] in ("query", "path", "header", "cookie"):
        parts = parts[1:]
    path = ""
    for part in parts:
        if isinstance(part, str) and part.startswith("function-"):
            continue  # a validator's name (function-wrap[…]), not a place in the input
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def install_handlers(api: NinjaAPI) -> None:
    """Map every exception the API can meet to the error shape."""

    def respond(request: HttpRequest, status: int, body: dict[str, object]) -> HttpResponse:
        return api.create_response(request, body, status=status)

    def on_ledger_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
        if isinstance(exc, QuotaExceeded):  # with Retry-After (RetryInfo for OTLP protobuf)
            return throttled_response(request, exc)
        return respond(request, exc.status, error_body(exc.code, exc.message, exc.details))

    def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        problems = [
            {
                "path": _location(e.get("loc", ())),
                "message": str(e.get("msg", "invalid")).removeprefix("Value error, "),
            }
            for e in exc.errors
        ]
        first = problems[0] if problems else {"path": "body", "message": "invalid"}
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        message = f"{first['path']}: {first['message']}{more}"
        return respond(request, 422, error_body("invalid", message, {"problems": problems}))

    def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        if isinstance(exc.__cause__, DomainError):
            return on_ledger_error(request, exc.__cause__)
        status = exc.status_code
        code = HTTP_CODES.get(status, "error")
        if isinstance(exc, AuthenticationError):
            code = "unauthorized"
        elif isinstance(exc, AuthorizationError):
            code = "forbidden"
        return respond(request, status, error_body(code, str(exc.message)))

    def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, 404, error_body("not_found", str(exc) or "not found"))

    def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
        limit = max_body_bytes()
        message = f"the body is larger than {limit} bytes"
        return respond(request, 413, error_body("too_large", message, {"maxBytes": limit}))

    def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.exception("unexpected error in %s %s", request.method, request.path)
        return respond(request, 500, error_body("internal", "an unexpected error occurred"))

    def on_database_error(request: HttpRequest, exc: DatabaseLayerError) -> HttpResponse:
        # 503 with Retry-After, not a 500; a replica's failure is served again from the primary.
        if is_outage(exc) or is_recovery_conflict(exc):
            return unavailable_response(request, exc)
        return on_unexpected(request, exc)

    api.add_exception_handler(Exception, on_unexpected)  # type: ignore[arg-type]
    api.add_exception_handler(DatabaseLayerError, on_database_error)  # type: ignore[arg-type]
    api.add_exception_handler(DomainError, on_ledger_error)  # type: ignore[arg-type]
    api.add_exception_handler(ValidationError, on_validation_error)  # type: ignore[arg-type]
    api.add_exception_handler(HttpError, on_http_error)  # type: ignore[arg-type]
    api.add_exception_handler(Http404, on_not_found)  # type: ignore[arg-type]
    api.add_exception_handler(RequestDataTooBig, on_too_big)  # type: ignore[arg-type]
