"""A dataset as a streamed JSON Lines download, for the API and the page alike.

Under ASGI a synchronous iterator would be read whole into memory before the first byte goes
out, so there the lines are pulled a chunk at a time through `sync_to_async` (one thread, one
database connection, as the generator needs); under WSGI they are written as they come.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse

from transcripts.datasets import DatasetQuery, jsonl_lines
from transcripts.models import Project

CONTENT_TYPE = "application/x-ndjson; charset=utf-8"
CHUNK_BYTES = 1 << 16


def _chunks(lines: Iterator[str]) -> Iterator[bytes]:
    """lines joined into chunks of about CHUNK_BYTES."""
    pending: list[bytes] = []
    size = 0
    for line in lines:
        encoded = line.encode()
        pending.append(encoded)
        size += len(encoded)
        if size >= CHUNK_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def _next_chunk(chunks: Iterator[bytes]) -> bytes:
    """The next chunk, b"" at the end."""
    return next(chunks, b"")


async def _pulled(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """chunks, each read in the thread that runs the database work."""
    pull = sync_to_async(_next_chunk, thread_sensitive=True)
    while chunk := await pull(chunks):
        yield chunk


def dataset_response(
    request: HttpRequest, project: Project, query: DatasetQuery
) -> StreamingHttpResponse:
    """The project's dataset as a JSON Lines download (the query was checked already)."""
    chunks = _chunks(jsonl_lines(project, query))
    content = _pulled(chunks) if isinstance(request, ASGIRequest) else chunks
    response = StreamingHttpResponse(content, content_type=CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{query.filename}"'
    response["Cache-Control"] = "no-store"
    return response
