"""Live run events as Server-Sent Events, fed by PostgreSQL LISTEN/NOTIFY (ASGI only).

The stream replays the backlog after Last-Event-ID (or ?afterSeq=), then wakes on the run's
notifications, which the ledger sends in the same transaction as each append or status
change. It never polls: between notifications it only sends a keep-alive comment. It ends
with an `event: status` carrying the run's final status once the run is closed.

A waiting stream holds no database connection: the request's connection goes back to the pool
once the caller is checked, the notifications come through the process's one listening
connection (`transcripts.live`), and the reads borrow a connection of the streams' own pool
for one query (`selectors.streams`); the streams of one run woken by one notification share
one read. A client too slow for its stream is dropped with a retry hint.

When the database goes away mid-stream, the stream ends cleanly with a retry hint and an
`event: unavailable` (the API's error shape); while it is down, a new stream is refused 503
with Retry-After. Clients reconnect with Last-Event-ID and continue where they stopped.

`follow_events` is that machinery without the framing; `follow_run` frames it as our events,
the AI SDK chat backend (`chat_stream.py`) as UI message chunks.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Callable, Coroutine, Hashable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Generic, TypeVar
from uuid import UUID

import psycopg
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponseBase
from ninja.errors import HttpError

from transcripts.api.access import run_id_for_caller
from transcripts.api.auth import authenticate
from transcripts.api.errors import error_response
from transcripts.api.schemas import MAX_INT
from transcripts.db_availability import describe, is_outage, release_connections
from transcripts.errors import DomainError, InvalidInput
from transcripts.ids import to_uuid
from transcripts.json_errors import error_body
from transcripts.ledger import run_channel
from transcripts.ledger.quotas import QuotaExceeded
from transcripts.limits import throttled_response
from transcripts.live import DROPPED, LOST, Subscription, listener
from transcripts.models import OPEN_STATUSES
from transcripts.outage import RETRY_AFTER_SECONDS, busy_response
from transcripts.permissions import READ
from transcripts.selectors.streams import RunState, StoredEvent, events_after, run_state
from transcripts.sse import event_stream, opening

logger = logging.getLogger(__name__)

BATCH = 1000
KEEPALIVE_SECONDS = 15.0


def _event_name(kind: str) -> str:
    # A kind may be any data-<name>; a line break there would forge SSE fields.
    return kind.replace("\r", " ").replace("\n", " ")


# Frames of events up to this size are remembered (every stream of a run sends the same one);
# larger ones are formatted each time, so the cache's memory stays bounded.
CACHED_FRAME_BYTES = 64_000


def event_frame(seq: int, kind: str, data_json: str, at: datetime) -> str:
    """One event as an SSE frame: id = seq, event = kind, data = the event JSON."""
    if len(data_json) <= CACHED_FRAME_BYTES:
        return _cached_frame(seq, kind, data_json, at)
    return _frame(seq, kind, data_json, at)


@lru_cache(maxsize=256)
def _cached_frame(seq: int, kind: str, data_json: str, at: datetime) -> str:
    return _frame(seq, kind, data_json, at)


def _frame(seq: int, kind: str, data_json: str, at: datetime) -> str:
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
# database went away; the client was too slow and must reconnect.
LISTENING = "listening"
IDLE = "idle"
UNAVAILABLE = "unavailable"
SLOW = "slow"
RunItem = StoredEvent | RunEnded | str

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _SharedReads(Generic[K, V]):
    """Reads in flight by key: a stream asking what another is reading right now (the same
    run, seq and listener epoch) waits for that read instead of running its own."""

    def __init__(self) -> None:
        self._tasks: dict[K, asyncio.Task[V]] = {}

    async def get(self, key: K, read: Callable[[], Coroutine[object, object, V]]) -> V:
        """read()'s result, shared with every caller of the same key meanwhile."""
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = asyncio.create_task(read())
            task.add_done_callback(lambda done: self._done(key, done))
        return await asyncio.shield(task)

    def _done(self, key: K, task: asyncio.Task[V]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
        if not task.cancelled():
            task.exception()  # retrieved: its callers (if any are left) raise it themselves


_event_reads: _SharedReads[tuple[UUID, int, int], list[StoredEvent]] = _SharedReads()
_state_reads: _SharedReads[tuple[UUID, int], RunState | None] = _SharedReads()


async def _events(sub: Subscription, run: UUID, after_seq: int) -> list[StoredEvent]:
    epoch = listener().epoch(sub.channel)
    return await _event_reads.get(
        (run, after_seq, epoch), lambda: events_after(run, after_seq, BATCH)
    )


async def _state(sub: Subscription, run: UUID) -> RunState | None:
    epoch = listener().epoch(sub.channel)
    return await _state_reads.get((run, epoch), lambda: run_state(run))


async def _wake(sub: Subscription) -> str:
    """What woke the stream: a notification (its payload), DROPPED, LOST, or IDLE when
    KEEPALIVE_SECONDS pass without one. Notifications queued meanwhile are taken too: one
    read answers them all."""
    try:
        async with asyncio.timeout(KEEPALIVE_SECONDS):
            notes = [await sub.queue.get()]
    except TimeoutError:
        return IDLE
    while not sub.queue.empty():
        notes.append(sub.queue.get_nowait())
    return next((note for note in notes if note in (DROPPED, LOST)), notes[-1])


def _open_at_most(payload: str | None, after_seq: int) -> bool:
    """Whether the notification payload says the run is open with nothing past after_seq (so
    its state need not be read again); False for no payload or one not understood."""
    try:
        told = json.loads(payload) if payload else None
        if not isinstance(told, dict):
            return False
        return bool(told.get("status") in OPEN_STATUSES and int(told["lastSeq"]) <= after_seq)
    except (ValueError, TypeError, KeyError):
        return False


async def follow_events(run_id: str, after_seq: int) -> AsyncGenerator[RunItem, None]:
    """run_id's events after after_seq, live until the run closes (RunEnded), the database
    goes away (UNAVAILABLE) or the client falls behind (SLOW). LISTENING comes once the
    stream listens and read its first events: a database that cannot be reached raises
    before it. IDLE comes after KEEPALIVE_SECONDS without news."""
    run = to_uuid(run_id)
    # The caller was checked on the request's pooled connection: back to the pool with it.
    await sync_to_async(release_connections)()
    listening = False
    try:
        # Listen first, then read the backlog: nothing appended in between can be missed.
        async with listener().subscribe(run_channel(run_id)) as sub:
            events = await _events(sub, run, after_seq)
            listening = True
            yield LISTENING
            woken: str | None = None
            while True:
                for event in events:
                    after_seq = event.seq
                    yield event
                if len(events) == BATCH:
                    events = await _events(sub, run, after_seq)
                    continue
                if not _open_at_most(woken, after_seq):
                    state = await _state(sub, run)
                    if state is None:
                        return
                    if state.status not in OPEN_STATUSES and after_seq >= state.last_seq:
                        yield RunEnded(state.status, state.last_seq, state.error_json)
                        return
                woken = await _wake(sub)
                while woken == IDLE:
                    yield IDLE
                    woken = await _wake(sub)
                if woken in (DROPPED, LOST):
                    yield SLOW if woken == DROPPED else UNAVAILABLE
                    return
                events = await _events(sub, run, after_seq)
    except psycopg.Error as exc:
        if not listening or not is_outage(exc):
            raise
        logger.warning("a stream of run %s ended: %s", run_id, describe(exc))
        yield UNAVAILABLE


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
            elif item in (LISTENING, SLOW):
                yield "retry: 1000\n\n"
            elif item == IDLE:
                yield ": keep-alive\n\n"
            else:
                yield unavailable_frame()
    finally:
        await items.aclose()


def _after_seq(request: HttpRequest) -> int:
    raw = request.headers.get("Last-Event-ID") or request.GET.get("afterSeq") or "0"
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 10 or int(raw) > MAX_INT:
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
    if listener().subscribers() >= settings.TRANSCRIPTS_STREAMS_MAX:
        return busy_response(request, "this process holds as many live streams as it may")
    try:
        async with opening():
            found_id, after_seq = await sync_to_async(_open_stream)(request, run_id)
    except HttpError as exc:  # authentication (401) or the scope (403)
        code = "unauthorized" if exc.status_code == 401 else "forbidden"
        return error_response(exc.status_code, code, str(exc.message))
    except QuotaExceeded as exc:  # 429 with Retry-After
        return throttled_response(request, exc)
    except DomainError as exc:
        return error_response(exc.status, exc.code, exc.message, exc.details)
    return await event_stream(
        request, follow_run(found_id, after_seq), "text/event-stream; charset=utf-8"
    )
