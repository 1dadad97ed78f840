"""Live run events as Server-Sent Events, fed by PostgreSQL LISTEN/NOTIFY (ASGI only).

The stream replays the backlog after Last-Event-ID (or ?afterSeq=), then wakes on the run's
notifications, which the ledger sends in the same transaction as each append or status
change. It never polls: between notifications it only sends a keep-alive comment. It ends
with an `event: status` carrying the run's final status once the run is closed.

When the database goes away mid-stream, the stream ends cleanly with a retry hint and an
`event: unavailable` (the API's error shape); while it is down, a new stream is refused 503
with Retry-After. Clients reconnect with Last-Event-ID and continue where they stopped.

`follow_events` is that machinery without the framing; `follow_run` frames it as our events,
the AI SDK chat backend (`chat_stream.py`) as UI message chunks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from datetime import datetime

import psycopg
from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse
from ninja.errors import HttpError

from transcripts.api.access import run_id_for_caller
from transcripts.api.auth import authenticate
from transcripts.api.errors import error_response
from transcripts.api.schemas import MAX_INT
from transcripts.db_availability import conninfo, describe, is_outage
from transcripts.errors import DomainError, InvalidInput
from transcripts.ids import to_uuid
from transcripts.json_errors import error_body
from transcripts.ledger import run_channel
from transcripts.models import OPEN_STATUSES
from transcripts.outage import RETRY_AFTER_SECONDS, unavailable_response
from transcripts.permissions import READ
from transcripts.selectors.streams import (
    StoredEvent,
    events_after,
    listening_connection,
    run_state,
)

logger = logging.getLogger(__name__)

BATCH = 1000
KEEPALIVE_SECONDS = 15.0


def _event_name(kind: str) -> str:
    # A kind may be any data-<name>; a line break there would forge SSE fields.
    return kind.replace("\r", " ").replace("\n", " ")


def event_frame(seq: int, kind: str, data_json: str, at: datetime) -> str:
    """One event as an SSE frame: id = seq, event = kind, data = the event JSON."""
    at_json = json.dumps(at, cls=DjangoJSONEncoder)
    body = f'{{"seq":{seq},"kind":{json.dumps(kind)},"data":{data_json},"at":{at_json}}}'
    return f"id: {seq}\nevent: {_event_name(kind)}\ndata: {body}\n\n"


def status_frame(status: str, last_seq: int, error_json: str | None) -> str:
    """The closing frame: the run's final status."""
    body = f'{{"status":{json.dumps(status)},"lastSeq":{last_seq},"error":{error_json or "null"}}}'
    return f"event: status\ndata: {body}\n\n"


def unavailable_frame() -> str:
    """The last frame of a stream the database went away from: reconnect (with Last-Event-ID)
    after the retry hint."""
    message = "the database went away; reconnect with Last-Event-ID to continue"
    body = json.dumps(error_body("unavailable", message, {"retryAfter": RETRY_AFTER_SECONDS}))
    return f"retry: {RETRY_AFTER_SECONDS * 1000}\nevent: unavailable\ndata: {body}\n\n"


@dataclass(frozen=True)
class RunEnded:
    """The run is closed and every event of it was read."""

    status: str
    last_seq: int
    error_json: str | None


# What follow_events yields besides events: it listens now; nothing new for a while; the
# database went away.
LISTENING = "listening"
IDLE = "idle"
UNAVAILABLE = "unavailable"
RunItem = StoredEvent | RunEnded | str


async def follow_events(run_id: str, after_seq: int) -> AsyncGenerator[RunItem, None]:
    """run_id's events after after_seq, live until the run closes (RunEnded) or the database
    goes away (UNAVAILABLE). LISTENING comes once the stream listens: a database that cannot
    be reached raises before it. IDLE comes after KEEPALIVE_SECONDS without news."""
    run_uuid = to_uuid(run_id)
    # Listen first, then read the backlog: nothing appended in between can be missed.
    conn = await listening_connection(conninfo(), run_channel(run_id))
    try:
        yield LISTENING
        while True:
            while True:
                events = await events_after(conn, run_uuid, after_seq, BATCH)
                for event in events:
                    after_seq = event.seq
                    yield event
                if len(events) < BATCH:
                    break
            state = await run_state(conn, run_uuid)
            if state is None:
                return
            if state.status not in OPEN_STATUSES and after_seq >= state.last_seq:
                yield RunEnded(state.status, state.last_seq, state.error_json)
                return
            woken = False
            while not woken:
                # Leaving the generator hands the connection back for the queries above;
                # notifications that arrive meanwhile wait in psycopg's backlog.
                async for _ in conn.notifies(timeout=KEEPALIVE_SECONDS, stop_after=1):
                    woken = True
                if not woken:
                    yield IDLE
    except psycopg.Error as exc:
        if not is_outage(exc):
            raise
        logger.warning("a stream of run %s ended: %s", run_id, describe(exc))
        yield UNAVAILABLE
    finally:
        await conn.close()


async def follow_run(run_id: str, after_seq: int) -> AsyncGenerator[str, None]:
    """SSE frames of run_id's events after after_seq, live until the run closes or the
    database goes away. The first frame (a retry hint) comes once the stream listens: a
    database that cannot be reached raises before it."""
    items = follow_events(run_id, after_seq)
    try:
        async for item in items:
            if isinstance(item, StoredEvent):
                yield event_frame(item.seq, item.kind, item.data_json, item.at)
            elif isinstance(item, RunEnded):
                yield status_frame(item.status, item.last_seq, item.error_json)
            elif item == LISTENING:
                yield "retry: 1000\n\n"
            elif item == IDLE:
                yield ": keep-alive\n\n"
            else:
                yield unavailable_frame()
    finally:
        await items.aclose()


async def _starting_with(first: str, rest: AsyncGenerator[str, None]) -> AsyncIterator[str]:
    try:
        yield first
        async for frame in rest:
            yield frame
    finally:
        await rest.aclose()  # a client that left: the stream's connection closes now


def _after_seq(request: HttpRequest) -> int:
    raw = request.headers.get("Last-Event-ID") or request.GET.get("afterSeq") or "0"
    raw = raw.strip()
    if not raw.isdigit() or len(raw) > 10 or int(raw) > MAX_INT:
        raise InvalidInput("Last-Event-ID and afterSeq must be a seq (an integer ≥ 0)")
    return int(raw)


def _open_stream(request: HttpRequest, run_id: str) -> tuple[str, int]:
    """Authenticate and find the run as every API endpoint does; returns (run id, after seq)."""
    # Attached where ninja's auth attaches it, for api.access to find.
    request.auth = authenticate(request, writes=False)  # type: ignore[attr-defined]
    return run_id_for_caller(request, run_id, needs=[READ]), _after_seq(request)


async def run_stream(request: HttpRequest, run_id: str) -> HttpResponseBase:
    """GET /api/v1/runs/{runId}/stream."""
    if request.method != "GET":
        response = error_response(405, "method_not_allowed", f"{request.method} is not allowed")
        response["Allow"] = "GET"
        return response
    try:
        found_id, after_seq = await sync_to_async(_open_stream)(request, run_id)
    except HttpError as exc:  # authentication (401) or the scope (403)
        code = "unauthorized" if exc.status_code == 401 else "forbidden"
        return error_response(exc.status_code, code, str(exc.message))
    except DomainError as exc:
        return error_response(exc.status, exc.code, exc.message, exc.details)
    frames = follow_run(found_id, after_seq)
    try:
        first = await anext(frames)
    except psycopg.Error as exc:
        if not is_outage(exc):
            raise
        return unavailable_response(request, exc)
    stream = StreamingHttpResponse(
        _starting_with(first, frames), content_type="text/event-stream; charset=utf-8"
    )
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return stream
