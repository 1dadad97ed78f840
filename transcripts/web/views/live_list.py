"""A project's live stream (SSE): what the thread list and an open conversation need to know
to show new work without a reload.

It tells a member of the project, as events named `thread` or `run`, when a thread of the
project is created and when a run of one of its threads begins or changes status: ids and a
status only, never content. The page then asks for what it shows (a row of the list, checked
against its filters by the list's own view; the conversation's new live block) with the
reader's rights. Hidden threads are told only to those who see them.

A waiting stream holds no database connection: its caller is checked on the request's pooled
connection, which goes back before the wait, and the notifications come through the process's
one listening connection (`transcripts.live`). Each tab holds one such stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.views.decorators.http import require_GET

from transcripts.db_availability import release_connections
from transcripts.ledger import project_channel, project_event
from transcripts.live import DROPPED, LOST, Subscription, listener
from transcripts.outage import busy_response
from transcripts.sse import event_stream, opening
from transcripts.web.access import get_project_for_user

KEEPALIVE_SECONDS = 15.0
RETRY_MS = 2000


def _reader(request: HttpRequest, slug: str) -> tuple[int, bool] | None:
    """The project's id and whether the caller sees hidden threads (None: not signed in); a
    404 for a non-member."""
    try:
        if not request.user.is_authenticated:
            return None
        project, access = get_project_for_user(request, slug)
    finally:
        release_connections()  # nothing is read while the stream waits
    return project.pk, access.sees_hidden


@require_GET
async def project_live(request: HttpRequest, slug: str) -> HttpResponseBase:
    """GET /p/<slug>/live/: the project's thread and run events as SSE, for its members."""
    if listener().subscribers() >= settings.TRANSCRIPTS_STREAMS_MAX:
        return busy_response(request, "this process holds as many live streams as it may")
    try:
        async with opening():
            reader = await sync_to_async(_reader)(request, slug)
    except Http404:
        return HttpResponse("No such project.", status=404)
    if reader is None:
        return HttpResponse("Sign in to follow this project.", status=401)
    project_id, sees_hidden = reader
    return await event_stream(request, _frames(project_id, sees_hidden), "text/event-stream")


async def _frames(project_id: int, sees_hidden: bool) -> AsyncGenerator[str, None]:
    """A retry hint once listening, then one frame per event of the project the reader may
    know of, keep-alive comments between; ends when the listener drops or loses it."""
    async with listener().subscribe(project_channel(project_id)) as sub:
        yield f"retry: {RETRY_MS}\n\n"
        while True:
            payload = await _next(sub)
            if payload is None:
                yield ": keep-alive\n\n"
                continue
            if payload in (DROPPED, LOST):
                yield "event: unavailable\ndata: {}\n\n" if payload == LOST else "\n"
                return
            frame = _frame(payload, sees_hidden)
            if frame:
                yield frame


async def _next(sub: Subscription) -> str | None:
    """The subscription's next payload, or None after KEEPALIVE_SECONDS without one."""
    try:
        return await asyncio.wait_for(sub.queue.get(), KEEPALIVE_SECONDS)
    except TimeoutError:
        return None


def _frame(payload: str, sees_hidden: bool) -> str:
    """The SSE frame of a notification ("" for one the reader may not know of)."""
    event = project_event(payload)
    if event is None or (event["hidden"] and not sees_hidden):
        return ""
    data = {key: value for key, value in event.items() if key != "hidden"}
    return f"event: {event['kind']}\ndata: {json.dumps(data)}\n\n"
