"""Runs: begin, read, append and replay events, lifecycle, and the AI SDK adapter."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import (
    ERRORS,
    MAX_INT,
    check_run_visible,
    run_out,
    visible_run,
    visible_thread,
)
from transcripts.api.ai_sdk_stream import answered_elsewhere, parse_stream, to_events
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import check_depth, read_body
from transcripts.api.schemas import (
    AiSdkOut,
    AppendOut,
    EventBatchIn,
    EventPage,
    FailIn,
    RunIn,
    RunMessagesOut,
    RunOut,
)
from transcripts.errors import InvalidInput, InvalidStream
from transcripts.models import Event, Run

router = Router(tags=["runs"], auth=read_auth)


def _check_batch_length(count: int) -> None:
    limit = int(settings.TRANSCRIPTS_MAX_BATCH_EVENTS)
    if count > limit:
        raise InvalidInput(
            f"a batch holds at most {limit} events, not {count}",
            field="events",
            maxEvents=limit,
            events=count,
        )


@router.post(
    "/threads/{threadId}/runs", response={200: RunOut, 201: RunOut, **ERRORS}, auth=ingest_auth
)
def begin_run(request: HttpRequest, threadId: str, payload: RunIn) -> Status[dict[str, Any]]:
    """Begin a run (201): from the head, from forkFromMessageId, or as a new root (null)."""
    thread = visible_thread(request, threadId)
    fork_from: Any = ledger.HEAD
    if "forkFromMessageId" in payload.model_fields_set:
        fork_from = payload.forkFromMessageId
    run, created = ledger.begin_run(
        thread=thread, fork_from=fork_from, run_id=payload.id, metadata=payload.metadata
    )
    return Status(201 if created else 200, run_out(run))


@router.get("/runs/{runId}", response={200: RunOut, **ERRORS})
def get_run(request: HttpRequest, runId: str) -> dict[str, Any]:
    """One run."""
    return run_out(visible_run(request, runId))


@router.get("/runs/{runId}/messages", response={200: RunMessagesOut, **ERRORS})
def run_messages(request: HttpRequest, runId: str) -> dict[str, Any]:
    """The run's projection, also while it streams and after it failed or was superseded."""
    run = visible_run(request, runId)
    projection = selectors.project_run(run)
    return {
        "runId": run.id,
        "status": run.status,
        "lastSeq": projection.last_seq,
        "open": projection.open,
        "messages": projection.messages,
        "errors": projection.errors,
        "annotations": projection.annotations,
        "metadata": projection.metadata,
    }


@router.post("/runs/{runId}/events", response={200: AppendOut, **ERRORS}, auth=ingest_auth)
def append_events(request: HttpRequest, runId: str, payload: EventBatchIn) -> dict[str, Any]:
    """Append a batch after lastSeq, all or nothing; exact re-sends are no-ops."""
    _check_batch_length(len(payload.events))
    run_id = check_run_visible(request, runId)
    events = [{"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at} for e in payload.events]
    result = ledger.append_events(run=run_id, events=events)
    return {
        "lastSeq": result.last_seq,
        "accepted": result.accepted,
        "duplicates": result.duplicates,
    }


@router.get("/runs/{runId}/events", response={200: EventPage, **ERRORS})
def replay_events(
    request: HttpRequest,
    runId: str,
    afterSeq: int = Query(0, ge=0, le=MAX_INT),
    limit: int = Query(500, ge=1, le=5000),
) -> dict[str, Any]:
    """Stored events after afterSeq, in order; follow nextAfterSeq while hasMore."""
    run = visible_run(request, runId)
    events = selectors.replay(run=run, after_seq=afterSeq, limit=limit + 1)
    more = len(events) > limit
    events = events[:limit]
    return {
        "events": [{"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at} for e in events],
        "nextAfterSeq": events[-1].seq if events else afterSeq,
        "hasMore": more,
    }


@router.post("/runs/{runId}/commit", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def commit_run(request: HttpRequest, runId: str) -> dict[str, Any]:
    """Materialize the run as the active continuation of its fork point (idempotent)."""
    return run_out(ledger.commit_run(run=visible_run(request, runId)))


@router.post("/runs/{runId}/fail", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def fail_run(request: HttpRequest, runId: str, payload: FailIn) -> dict[str, Any]:
    """Mark an open run failed; its events stay."""
    return run_out(ledger.fail_run(run=visible_run(request, runId), error=payload.error))


@router.post("/runs/{runId}/cancel", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def cancel_run(request: HttpRequest, runId: str) -> dict[str, Any]:
    """Cancel an open run; its events stay."""
    return run_out(ledger.cancel_run(run=visible_run(request, runId)))


@router.post("/runs/{runId}/restore", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def restore_run(request: HttpRequest, runId: str) -> dict[str, Any]:
    """Make a superseded run's branch the active one again."""
    return run_out(ledger.restore_run(run=visible_run(request, runId)))


def _earlier_tool_names(run: Run, call_ids: list[str]) -> dict[str, str]:
    """The tool names of calls made earlier in the run's thread (the AI SDK sends a tool's
    output without its name, e.g. after an approval, in a stream of its own)."""
    if not call_ids:
        return {}
    calls = (
        Event.objects.filter(thread_id=run.thread_id, kind="tool-call")
        .filter(data__toolCallId__in=call_ids[:1000])
        .order_by("id")
        .values_list("data__toolCallId", "data__toolName")
    )
    return {call_id: name for call_id, name in calls if isinstance(name, str) and name}


_AI_SDK_BODY = {
    "required": True,
    "description": "A UI message stream: the text/event-stream body the AI SDK sends"
    " (`data: {...}` frames, `data: [DONE]`), or a JSON array of its chunks.",
    "content": {
        "application/json": {
            "schema": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"type": {"type": "string", "minLength": 1}},
                    "required": ["type"],
                },
            }
        },
        "text/event-stream": {"schema": {"type": "string"}},
    },
}


@router.post(
    "/runs/{runId}/ai-sdk",
    response={200: AiSdkOut, **ERRORS},
    auth=ingest_auth,
    openapi_extra={"requestBody": _AI_SDK_BODY},
)
def ai_sdk_stream(
    request: HttpRequest,
    runId: str,
    commit: bool = Query(False, description="Commit the run after appending"),
    afterSeq: int | None = Query(
        None,
        ge=0,
        le=MAX_INT,
        description="Number the events from afterSeq + 1 (default: the run's lastSeq)."
        " Sending the same stream again with the same afterSeq is then a no-op: a safe retry.",
    ),
) -> dict[str, Any]:
    """Append a Vercel AI SDK UI message stream as events after lastSeq (or afterSeq)."""
    run = visible_run(request, runId)
    body = read_body(request)
    try:
        chunks = parse_stream(body, request.content_type or "")
        check_depth(chunks, body)
        start = run.last_seq if afterSeq is None else afterSeq
        tool_names = _earlier_tool_names(run, answered_elsewhere(chunks))
        events = to_events(chunks, after_seq=start, tool_names=tool_names)
    except InvalidStream as exc:
        problems = [{"path": path, "message": message} for path, message in exc.problems]
        raise InvalidInput(f"not a UI message stream: {exc}", problems=problems) from None
    _check_batch_length(len(events))
    # Append and commit together: a refused commit leaves no half-stored stream behind.
    with transaction.atomic():
        result = ledger.append_events(run=run, events=events)
        committed: Run | None = ledger.commit_run(run=run) if commit else None
    status = (
        committed.status
        if committed
        else Run.objects.values_list("status", flat=True).get(pk=run.pk)
    )
    return {
        "lastSeq": result.last_seq,
        "accepted": result.accepted,
        "duplicates": result.duplicates,
        "status": status,
        "committed": committed is not None,
    }
