"""What every server-sent event stream shares (a run's, `api/stream.py`; a project's,
`web/views/live_list.py`): one line of turns for opening streams, and the response that starts
once the first frame is read, so a database outage before it is a quick 503."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

import psycopg
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from transcripts.db_availability import is_outage
from transcripts.outage import unavailable_response

_openings: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}


def opening() -> asyncio.Semaphore:
    """The turns of the streams checking their caller (TRANSCRIPTS_STREAM_OPENINGS at once, a
    share of the request pool): a burst of new streams or tabs waits here, in line, instead of
    emptying the pool the appends need."""
    loop = asyncio.get_running_loop()
    turns = _openings.get(loop)
    if turns is None:
        turns = _openings[loop] = asyncio.Semaphore(settings.TRANSCRIPTS_STREAM_OPENINGS)
    return turns


async def event_stream(
    request: HttpRequest, frames: AsyncGenerator[str, None], content_type: str
) -> HttpResponseBase:
    """The streaming response of frames once the first is read (an outage then: a 503)."""
    try:
        first = await anext(frames)
    except psycopg.Error as exc:
        if not is_outage(exc):
            raise
        return unavailable_response(request, exc)
    stream = StreamingHttpResponse(_starting_with(first, frames), content_type=content_type)
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return stream


async def _starting_with(first: str, rest: AsyncGenerator[str, None]) -> AsyncIterator[str]:
    try:
        yield first
        async for frame in rest:
            yield frame
    finally:
        await rest.aclose()  # a client that left: the stream's connection closes now
