"""Runs: begin one, read it and its projection, and its lifecycle (commit, fail, cancel,
restore). Events are in `events.py`, the AI SDK adapter in `ai_sdk.py`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from transcripts import ledger, selectors
from transcripts.api.access import get_run_for_caller, get_thread_for_caller
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import FailIn, RunIn, RunMessagesOut, RunOut
from transcripts.models import Run

router = Router(tags=["runs"], auth=read_auth)


@router.post(
    "/threads/{threadId}/runs", response={200: RunOut, 201: RunOut, **ERRORS}, auth=ingest_auth
)
def begin_run(request: HttpRequest, threadId: str, payload: RunIn) -> Status[Run]:
    """Begin a run (201): from the head, from forkFromMessageId, or as a new root (null)."""
    thread = get_thread_for_caller(request, threadId)
    fork_from: Any = ledger.HEAD
    if "forkFromMessageId" in payload.model_fields_set:
        fork_from = payload.forkFromMessageId
    run, created = ledger.begin_run(
        thread=thread, fork_from=fork_from, run_id=payload.id, metadata=payload.metadata
    )
    return Status(201 if created else 200, run)


@router.get("/runs/{runId}", response={200: RunOut, **ERRORS})
def get_run(request: HttpRequest, runId: str) -> Run:
    """One run."""
    return get_run_for_caller(request, runId)


@router.get("/runs/{runId}/messages", response={200: RunMessagesOut, **ERRORS})
def run_messages(request: HttpRequest, runId: str) -> dict[str, Any]:
    """The run's projection, also while it streams and after it failed or was superseded."""
    run = get_run_for_caller(request, runId)
    return {"run": run, "projection": selectors.project_run(run)}


@router.post("/runs/{runId}/commit", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def commit_run(request: HttpRequest, runId: str) -> Run:
    """Materialize the run as the active continuation of its fork point (idempotent)."""
    return ledger.commit_run(run=get_run_for_caller(request, runId))


@router.post("/runs/{runId}/fail", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def fail_run(request: HttpRequest, runId: str, payload: FailIn) -> Run:
    """Mark an open run failed; its events stay."""
    return ledger.fail_run(run=get_run_for_caller(request, runId), error=payload.error)


@router.post("/runs/{runId}/cancel", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def cancel_run(request: HttpRequest, runId: str) -> Run:
    """Cancel an open run; its events stay."""
    return ledger.cancel_run(run=get_run_for_caller(request, runId))


@router.post("/runs/{runId}/restore", response={200: RunOut, **ERRORS}, auth=ingest_auth)
def restore_run(request: HttpRequest, runId: str) -> Run:
    """Make a superseded run's branch the active one again."""
    return ledger.restore_run(run=get_run_for_caller(request, runId))
