"""Queued runs for outside stream layers (the `external` generator): list and claim."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.params.functions import Query
from pydantic import Field

from transcripts import ledger
from transcripts.api.access import ERRORS, caller, run_out, visible_run
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.schemas import InputSchema, RunOut, RunStatusName
from transcripts.models import Run
from transcripts.selectors import conversation_for

router = Router(tags=["workers"], auth=read_auth)


class RunList(Schema):
    runs: list[RunOut]


class ClaimIn(InputSchema):
    worker: str = Field(min_length=1, max_length=200, description="who holds the lease")
    leaseSeconds: float = Field(30, gt=0, le=3600)


class ClaimOut(Schema):
    run: RunOut
    leaseExpiresAt: str
    parameters: dict[str, Any]
    messages: list[dict[str, Any]] = Field(
        description="The conversation to continue: the path to the fork point, then the run's"
    )


@router.get("/runs", response={200: RunList, **ERRORS})
def list_runs(
    request: HttpRequest,
    status: Annotated[RunStatusName, Query(description="Runs with this status")] = "queued",
    generator: str | None = Query(None, description="e.g. external"),
    limit: int = Query(50, ge=1, le=500),
) -> dict[str, Any]:
    """Runs by status, oldest first: a stream layer polls this for queued external runs."""
    runs = Run.objects.filter(status=status).order_by("created_at")
    if not caller(request).is_staff:
        runs = runs.filter(thread__hidden=False)
    if generator:
        runs = runs.filter(generator=generator)
    return {"runs": [run_out(r) for r in runs[:limit]]}


@router.post("/runs/{runId}/claim", response={200: ClaimOut, **ERRORS}, auth=ingest_auth)
def claim_run(request: HttpRequest, runId: str, payload: ClaimIn) -> dict[str, Any]:
    """Take a queued run with a lease (claim again to renew it), and get what to continue."""
    run = ledger.claim_run(
        run=visible_run(request, runId), worker=payload.worker, lease_seconds=payload.leaseSeconds
    )
    assert run.lease_expires_at is not None
    return {
        "run": run_out(run),
        "leaseExpiresAt": run.lease_expires_at.isoformat(),
        "parameters": run.parameters,
        "messages": conversation_for(run),
    }
