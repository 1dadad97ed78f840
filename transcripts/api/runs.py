"""Runs: begin one, read it and its projection, and its lifecycle (commit, fail, cancel,
restore). Events are in `events.py`, the AI SDK adapter in `ai_sdk.py`.

Writes need the ingest scope and answer, to a token without read, ids and statuses only.
"""

from __future__ import annotations

from typing import TypedDict

from django.http import HttpRequest
from ninja import Router, Status

from transcripts import ledger, selectors
from transcripts.api.access import (
    get_run_for_caller,
    get_thread_for_caller,
    reads_content,
    require_may_stop,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import (
    FailIn,
    JsonObject,
    RunIn,
    RunMessagesOut,
    RunOut,
    RunStatusOut,
    run_out,
)
from transcripts.models import Run
from transcripts.permissions import INGEST, READ
from transcripts.projector import Projection

router = Router(auth=read_auth)  # mounted at /runs
thread_router = Router(auth=read_auth)  # mounted at /threads: a thread's new run
# What a write answers: the run, or its ids and status for a token without read.
RUN_OR_STATUS = RunOut | RunStatusOut
Answer = Run | JsonObject


class RunMessagesAnswer(TypedDict):
    """What RunMessagesOut reads."""

    run: Run
    projection: Projection


@thread_router.post(
    "/{threadId}/runs",
    response={200: RUN_OR_STATUS, 201: RUN_OR_STATUS, **ERRORS},
    auth=ingest_auth,
)
def begin_run(request: HttpRequest, threadId: str, payload: RunIn) -> Status[Answer]:
    """Begin a run (201): from the head, from forkFromMessageId, or as a new root (null)."""
    thread = get_thread_for_caller(request, threadId, needs=[INGEST])
    fork_from: object = ledger.HEAD
    if "forkFromMessageId" in payload.model_fields_set:
        fork_from = payload.forkFromMessageId
    run, created = ledger.begin_run(
        thread=thread, fork_from=fork_from, run_id=payload.id, metadata=payload.metadata
    )
    return Status(201 if created else 200, run_out(run, content=reads_content(request)))


@router.get("/{runId}", response={200: RunOut, **ERRORS})
def get_run(request: HttpRequest, runId: str) -> Run:
    """One run."""
    return get_run_for_caller(request, runId, needs=[READ])


@router.get("/{runId}/messages", response={200: RunMessagesOut, **ERRORS})
def run_messages(request: HttpRequest, runId: str) -> RunMessagesAnswer:
    """The run's projection, also while it streams and after it failed or was superseded."""
    run = get_run_for_caller(request, runId, needs=[READ])
    return {"run": run, "projection": selectors.project_run(run)}


@router.post("/{runId}/commit", response={200: RUN_OR_STATUS, **ERRORS}, auth=ingest_auth)
def commit_run(request: HttpRequest, runId: str) -> Answer:
    """Materialize the run as the active continuation of its fork point (idempotent)."""
    run = ledger.commit_run(run=get_run_for_caller(request, runId, needs=[INGEST]))
    return run_out(run, content=reads_content(request))


@router.post("/{runId}/fail", response={200: RUN_OR_STATUS, **ERRORS}, auth=ingest_auth)
def fail_run(request: HttpRequest, runId: str, payload: FailIn) -> Answer:
    """Mark an open run failed; its events stay."""
    run = get_run_for_caller(request, runId, needs=[INGEST])
    return run_out(ledger.fail_run(run=run, error=payload.error), content=reads_content(request))


@router.post("/{runId}/cancel", response={200: RUN_OR_STATUS, **ERRORS}, auth=ingest_auth)
def cancel_run(request: HttpRequest, runId: str) -> Answer:
    """Cancel an open run; its events stay. An agent's run: any ingest token of the project;
    a run started in the browser: a token with the admin scope."""
    run = get_run_for_caller(request, runId, needs=[INGEST])
    require_may_stop(request, run, action="cancel")
    return run_out(ledger.cancel_run(run=run), content=reads_content(request))


@router.post("/{runId}/restore", response={200: RUN_OR_STATUS, **ERRORS}, auth=ingest_auth)
def restore_run(request: HttpRequest, runId: str) -> Answer:
    """Make a superseded run's branch the active one again (who may: as for cancel)."""
    run = get_run_for_caller(request, runId, needs=[INGEST])
    require_may_stop(request, run, action="restore")
    return run_out(ledger.restore_run(run=run), content=reads_content(request))
