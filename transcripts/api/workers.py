"""Queued runs for outside stream layers (the `external` generator): list and claim."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Router
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import get_run_for_caller, readable_runs
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import ClaimIn, ClaimOut, RunList, RunStatusName
from transcripts.models import Run
from transcripts.permissions import INGEST, READ

router = Router(tags=["workers"], auth=read_auth)


@router.get("/runs", response={200: RunList, **ERRORS})
def list_runs(
    request: HttpRequest,
    status: Annotated[RunStatusName, Query(description="Runs with this status")] = "queued",
    generator: str | None = Query(None, description="e.g. external"),
    limit: int = Query(50, ge=1, le=500),
) -> dict[str, Any]:
    """Runs of the token's project by status, oldest first: a stream layer polls this for
    queued external runs."""
    runs = readable_runs(request, Run.objects.filter(status=status).order_by("created_at"))
    if generator:
        runs = runs.filter(generator=generator)
    return {"runs": list(runs[:limit])}


@router.post("/runs/{runId}/claim", response={200: ClaimOut, **ERRORS}, auth=ingest_auth)
def claim_run(request: HttpRequest, runId: str, payload: ClaimIn) -> dict[str, Any]:
    """Take a queued run with a lease (claim again to renew it), and get what to continue
    (the conversation: the read scope too)."""
    run = ledger.claim_run(
        run=get_run_for_caller(request, runId, needs=[READ, INGEST]),
        worker=payload.worker,
        lease_seconds=payload.leaseSeconds,
    )
    assert run.lease_expires_at is not None
    return {
        "run": run,
        "leaseExpiresAt": run.lease_expires_at.isoformat(),
        "parameters": run.parameters,
        "messages": selectors.conversation_for(run),
    }
