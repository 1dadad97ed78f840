"""Import and export of whole threads."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts import interchange
from transcripts.api.access import (
    caller_project,
    get_import_job_for_caller,
    get_thread_for_caller,
    require_scope,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS, check_storable
from transcripts.api.schemas import ImportJobOut, ImportOut
from transcripts.errors import BodyTooLarge, InvalidInput
from transcripts.models import ImportJob
from transcripts.permissions import INGEST, READ

router = Router(auth=read_auth)  # mounted at /imports
thread_router = Router(auth=read_auth)  # mounted at /threads: a thread's export
CHUNK = 1 << 16


@thread_router.get("/{threadId}/export", response={200: None, **ERRORS})
def export(
    request: HttpRequest,
    threadId: str,
    format: str = Query("canonical", description=", ".join(interchange.EXPORT_FORMATS)),
    leaf: str | None = Query(None, description="export the path to this message"),
    events: bool = Query(False, description="canonical: include every run's events"),
    branches: str | None = Query(
        None,
        description="threadprotocol: 'all' adds a child thread per other branch (JSON Lines)",
    ),
) -> StreamingHttpResponse:
    """Download a thread in a format (canonical: every branch; others: one path), written as
    it is read (canonical, ThreadProtocol): a refusal still comes before the first byte."""
    thread = get_thread_for_caller(request, threadId, needs=[READ])
    exported = interchange.stream_thread(
        thread, format, leaf=leaf, with_events=events, branches=branches
    )
    content_type = exported.content_type
    if "charset=" not in content_type:  # some formats name it already: say it once
        content_type += "; charset=utf-8"
    pieces = interchange.chunked(exported.pieces)
    response = StreamingHttpResponse(
        _pulled(pieces) if isinstance(request, ASGIRequest) else pieces,
        content_type=content_type,
    )
    response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
    return response


def _next_chunk(chunks: Iterator[bytes]) -> bytes | None:
    """The next chunk, None at the end (an empty chunk is not the end)."""
    return next(chunks, None)


async def _pulled(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """chunks, each made in the thread that runs the database work: under ASGI a synchronous
    iterator would be read whole before the first byte goes out."""
    pull = sync_to_async(_next_chunk, thread_sensitive=True)
    while (chunk := await pull(chunks)) is not None:
        yield chunk


def max_import_bytes() -> int:
    """The largest accepted import file."""
    return int(getattr(settings, "TRANSCRIPTS_MAX_IMPORT_BYTES", 1 << 30))


_IMPORT_BODY = {
    "required": True,
    "description": "The file to import, as the raw request body (any content type): a "
    "document in one of the formats, or an export zip (ChatGPT, Claude.ai, or one zipped JSON "
    "file).",
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
}


@router.post(
    "",
    response={201: ImportOut, 202: ImportJobOut, **ERRORS},
    auth=ingest_auth,
    openapi_extra={"requestBody": _IMPORT_BODY},
)
def create_import(
    request: HttpRequest,
    format: str | None = Query(None, description="detected when omitted"),
) -> Status[ImportJob | interchange.ImportResult]:
    """Import a file into the token's project: small files at once (201, with the import
    report), large ones by a worker (202, poll the job for its report)."""
    require_scope(request, INGEST)
    project = caller_project(request)
    name = request.headers.get("X-Filename", "upload.json")
    check_storable(name, "X-Filename")
    limit = max_import_bytes()
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"the file is larger than {limit} bytes", maxBytes=limit)
    spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115
    size = 0
    with spool:
        while chunk := request.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"the file is larger than {limit} bytes", maxBytes=limit)
            spool.write(chunk)
        spool.seek(0)
        if size > int(settings.TRANSCRIPTS_SYNC_IMPORT_BYTES):
            job = interchange.queue_import(
                content=cast(Any, spool),
                filename=name,
                size=size,
                fmt=format or None,
                project=project,
                user=getattr(request, "user", None),
            )
            return Status(202, job)
        try:
            result = interchange.import_stream(
                cast(Any, spool),
                format or None,
                project=project,
            )
        except RecursionError:  # a reader of some format recursed too deep: still a 422
            raise InvalidInput("the file nests JSON too deeply to be imported") from None
    return Status(201, result)


@router.get("/{jobId}", response={200: ImportJobOut, **ERRORS})
def import_job(request: HttpRequest, jobId: str) -> ImportJob:
    """The progress of a background import of the token's project."""
    return get_import_job_for_caller(request, jobId)
