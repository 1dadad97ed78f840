"""Generator jobs: queued runs for stream layers outside the app (the `external` generator)
to list and claim with a lease."""

from __future__ import annotations

from typing import Annotated, TypedDict

from django.http import HttpRequest
from ninja import Router
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import get_run_for_caller, readable_runs
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import ClaimIn, ClaimOut, JsonObject, RunList, RunStatusName
from transcripts.models import Run
from transcripts.permissions import INGEST, READ
from transcripts.selectors.generator_jobs import first_runs, runs_by_status

router = Router(auth=read_auth)  # mounted at /runs


class RunsAnswer(TypedDict):
    """What RunList reads."""

    runs: list[Run]


class ClaimAnswer(TypedDict):
    """What ClaimOut reads."""

    run: Run
    leaseExpiresAt: str
    parameters: JsonObject
    messages: list[JsonObject]


# The operation ids are those from before the module was named for its job, so that clients
# generated from the OpenAPI schema keep their method names.
@router.get(
    "",
    response={200: RunList, **ERRORS},
    operation_id="transcripts_api_workers_list_runs",
)
def list_runs(
    request: HttpRequest,
    status: Annotated[RunStatusName, Query(description="Runs with this status")] = "queued",
    generator: str | None = Query(None, description="e.g. external"),
    limit: int = Query(50, ge=1, le=500),
) -> RunsAnswer:
    """Runs of the token's project by status, oldest first: a stream layer polls this for
    queued external runs."""
    runs = readable_runs(request, runs_by_status(status, generator))
    return {"runs": first_runs(runs, limit)}


@router.post(
    "/{runId}/claim",
    response={200: ClaimOut, **ERRORS},
    auth=ingest_auth,
    operation_id="transcripts_api_workers_claim_run",
)
def claim_run(request: HttpRequest, runId: str, payload: ClaimIn) -> ClaimAnswer:
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
