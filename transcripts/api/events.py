"""Events of a run: append a batch, replay what is stored."""

from __future__ import annotations

from typing import TypedDict

from django.http import HttpRequest
from ninja import Router
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import append_reach, get_run_for_caller, run_id_for_caller
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS, check_batch_length
from transcripts.api.schemas import MAX_INT, AppendOut, EventBatchIn, EventPage
from transcripts.errors import InvalidInput
from transcripts.ledger import AppendResult
from transcripts.ledger.quotas import charge_events
from transcripts.limits import event_charge
from transcripts.models import Event
from transcripts.permissions import INGEST, READ

router = Router(auth=read_auth)  # mounted at /runs


class EventPageAnswer(TypedDict):
    """What EventPage reads."""

    events: list[Event]
    nextAfterSeq: int
    hasMore: bool


# The operation ids are those of the endpoints before they had a router of their own, so
# that clients generated from the OpenAPI schema keep their method names.
@router.post(
    "/{runId}/events",
    response={200: AppendOut, **ERRORS},
    auth=ingest_auth,
    operation_id="transcripts_api_runs_append_events",
)
def append_events(request: HttpRequest, runId: str, payload: EventBatchIn) -> AppendResult:
    """Append a batch after lastSeq, all or nothing; exact re-sends are no-ops."""
    check_batch_length(len(payload.events))
    events = [{"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at} for e in payload.events]
    # The events are charged to the token's quotas before anything is stored: by the
    # one-statement append, which takes the charge along, or on their own below.
    charge = event_charge(request, len(events))
    # The common append checks the caller's reach in the statement that stores it: one round
    # trip. Anything else (another project, a gap, a re-send, a closed run) takes the full
    # path, whose access check and ledger say what is wrong.
    reach = append_reach(request, needs=[INGEST])
    if reach is not None:
        done = ledger.append_at_once(run=runId, events=events, within=reach, charge=charge)
        if done is not None:
            return done
        if charge is not None:
            charge_events(charge)
        # A larger batch, or one the single statement did not take: the ledger checks the
        # reach as it locks the run (no lookup of its own). A run it does not reach and events
        # it refuses go through the access check first, so an outsider hears 404 whatever it
        # sent.
        try:
            return ledger.append_events(run=runId, events=events, within=reach)
        except ledger.OutOfReach:
            pass  # the access check below says why (404, or 403 for a missing scope)
        except InvalidInput:
            run_id_for_caller(request, runId, needs=[INGEST])
            raise
    elif charge is not None:
        charge_events(charge)
    # The run's id is all the ledger needs: one small query here, the rest under its lock.
    run_id = run_id_for_caller(request, runId, needs=[INGEST])
    return ledger.append_events(run=run_id, events=events)


@router.get(
    "/{runId}/events",
    response={200: EventPage, **ERRORS},
    operation_id="transcripts_api_runs_replay_events",
)
def replay_events(
    request: HttpRequest,
    runId: str,
    afterSeq: int = Query(0, ge=0, le=MAX_INT),
    limit: int = Query(500, ge=1, le=5000),
) -> EventPageAnswer:
    """Stored events after afterSeq, in order; follow nextAfterSeq while hasMore."""
    run = get_run_for_caller(request, runId, needs=[READ])
    events = selectors.replay(run=run, after_seq=afterSeq, limit=limit + 1)
    more = len(events) > limit
    events = events[:limit]
    return {
        "events": events,
        "nextAfterSeq": events[-1].seq if events else afterSeq,
        "hasMore": more,
    }
