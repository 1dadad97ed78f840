"""What every router shares: the caller, visibility, serializers, cursors, error responses."""

from __future__ import annotations

import base64
import json
from typing import Any

from django.http import HttpRequest

from transcripts.api.auth import Principal
from transcripts.api.schemas import ErrorOut
from transcripts.errors import InvalidInput, NotFound
from transcripts.ids import is_ulid
from transcripts.ledger import moderation
from transcripts.models import Message, Run, Thread

ERRORS: dict[int, Any] = {status: ErrorOut for status in (400, 401, 403, 404, 409, 413, 422)}
MAX_INT = 2**31 - 1


def caller(request: HttpRequest) -> Principal:
    """The principal the auth class attached to request."""
    principal = getattr(request, "auth", None)
    assert isinstance(principal, Principal)
    return principal


def _audit_hidden_read(request: HttpRequest, thread_id: str) -> None:
    """Staff reading a hidden thread is recorded in the audit log (writes are audited apart)."""
    if request.method == "GET":
        moderation.record_hidden_api_read(
            principal=caller(request), thread_id=thread_id, path=request.path
        )


def visible_thread(request: HttpRequest, thread_id: str) -> Thread:
    """The thread, or NotFound when the id is unknown or the thread is hidden from the caller."""
    thread = Thread.objects.filter(pk=thread_id).first() if is_ulid(thread_id) else None
    if thread is None or (thread.hidden and not caller(request).is_staff):
        raise NotFound(f"thread {thread_id} does not exist", threadId=thread_id)
    if thread.hidden:
        _audit_hidden_read(request, thread.id)
    return thread


def check_run_visible(request: HttpRequest, run_id: str) -> str:
    """run_id, or NotFound when unknown or hidden from the caller (one small query)."""
    row = (
        Run.objects.filter(pk=run_id).values_list("thread__hidden", "thread_id").first()
        if is_ulid(run_id)
        else None
    )
    if row is None or (row[0] and not caller(request).is_staff):
        raise NotFound(f"run {run_id} does not exist", runId=run_id)
    if row[0]:
        _audit_hidden_read(request, row[1])
    return run_id


def visible_run(request: HttpRequest, run_id: str) -> Run:
    """The run, or NotFound when the id is unknown or its thread is hidden from the caller."""
    run = (
        Run.objects.select_related("thread").filter(pk=run_id).first() if is_ulid(run_id) else None
    )
    if run is None or (run.thread.hidden and not caller(request).is_staff):
        raise NotFound(f"run {run_id} does not exist", runId=run_id)
    if run.thread.hidden:
        _audit_hidden_read(request, run.thread_id)
    return run


def thread_out(thread: Thread) -> dict[str, Any]:
    """A thread in wire form."""
    return {
        "id": thread.id,
        "title": thread.title,
        "metadata": thread.metadata,
        "agents": thread.agents,
        "parentThreadId": thread.parent_thread_id,
        "headMessageId": thread.head_id,
        "hidden": thread.hidden,
        "locked": thread.locked,
        "createdAt": thread.created_at,
        "updatedAt": thread.updated_at,
    }


def run_out(run: Run) -> dict[str, Any]:
    """A run in wire form."""
    return {
        "id": run.id,
        "threadId": run.thread_id,
        "forkFromMessageId": run.fork_from_id,
        "status": run.status,
        "supersededBy": run.superseded_by_id,
        "lastSeq": run.last_seq,
        "error": run.error,
        "usage": run.usage,
        "generator": run.generator,
        "model": run.model,
        "metadata": run.metadata,
        "createdAt": run.created_at,
        "startedAt": run.started_at,
        "firstEventAt": run.first_event_at,
        "finishedAt": run.finished_at,
    }


def message_out(message: Message) -> dict[str, Any]:
    """A stored message in wire form: canonical, plus its run and depth."""
    return {**message.as_canonical(), "runId": message.run_id, "depth": message.depth}


def encode_cursor(*values: Any) -> str:
    """An opaque cursor holding values."""
    raw = json.dumps(list(values), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, arity: int) -> list[Any]:
    """The values of a cursor made by encode_cursor; InvalidInput when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (ValueError, RecursionError):
        values = None
    if not isinstance(values, list) or len(values) != arity:
        raise InvalidInput("cursor is not a cursor this API returned", field="cursor")
    return values


def clean_text(value: str, field: str) -> str:
    """value, refused when PostgreSQL text cannot hold it (NUL characters)."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field)
    return value
