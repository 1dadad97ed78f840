"""Reads of runs: the run itself, its events, its projection, and what a generator continues
(the run page's trace is in trace.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery

from transcripts.errors import InvalidInput, NotFound
from transcripts.ids import require_ulid, to_uuid
from transcripts.models import OPEN_STATUSES, Event, Message, Run, RunStatus, Thread
from transcripts.projector import Projection, Projector
from transcripts.selectors.paths import path_to
from transcripts.selectors.worker_liveness import since_a_worker_was_seen

_MAX_SEQ = 2**31 - 1


def get_run(run: Run | str, *, for_update: bool = False) -> Run:
    """The run (with its thread, without its snapshot until asked), or NotFound."""
    run_id = run.id if isinstance(run, Run) else require_ulid(run, "runId")
    # The snapshot can be large and few callers need it: it loads on first access.
    queryset = Run.objects.select_related("thread").defer("snapshot")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    try:
        return queryset.get(pk=run_id)
    except Run.DoesNotExist:
        raise NotFound(f"run {run_id} does not exist", runId=run_id) from None


def event_dicts(run: Run, after_seq: int) -> Iterable[dict[str, Any]]:
    """The run's events after after_seq as plain dicts, in order, streamed from the database."""
    # A plain cursor: the ORM's per-row converters cost more than the projection itself.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq, kind, data, at FROM transcripts_event"
            " WHERE run_id = %s AND seq > %s ORDER BY seq",
            [to_uuid(run.id), after_seq],
        )
        while rows := cursor.fetchmany(2000):
            for seq, kind, data, at in rows:
                if isinstance(data, str):
                    data = json.loads(data)
                yield {"seq": seq, "kind": kind, "data": data, "at": at}


def projector_for(run: Run) -> Projector:
    """A projector holding every event of the run (from its snapshot when it has a valid one)."""
    if run.snapshot:
        projector = Projector.from_snapshot(run.snapshot)
        if projector.parent_id == run.fork_from_id and projector.last_seq == run.snapshot_seq:
            return projector.apply_all(event_dicts(run, run.snapshot_seq))
    return Projector(run_id=run.id, parent_id=run.fork_from_id).apply_all(event_dicts(run, 0))


def project_run(run: Run | str) -> Projection:
    """The run's messages as they stand (its snapshot plus the events after it)."""
    return projector_for(get_run(run)).result()


def replay(*, run: Run | str, after_seq: int = 0, limit: int = 1000) -> list[Event]:
    """Stored events after after_seq, in order, at most limit of them."""
    run = get_run(run)
    numbers = (after_seq, limit)
    if any(type(n) is not int for n in numbers) or after_seq < 0 or limit < 1:
        raise InvalidInput(
            "afterSeq must be an integer ≥ 0 and limit an integer ≥ 1",
            afterSeq=str(after_seq),
            limit=str(limit),
        )
    # Seqs are 32-bit: a larger cursor or limit means "everything after", and must not
    # overflow PostgreSQL's bigint LIMIT.
    return event_page(run, after=min(after_seq, _MAX_SEQ), limit=min(limit, _MAX_SEQ))


def conversation_for(run: Run) -> list[dict[str, Any]]:
    """The canonical messages a generator continues: the path to the fork point, then the run's."""
    history: list[dict[str, Any]] = []
    if run.fork_from_id:
        fork = Message.objects.select_related("thread").get(pk=run.fork_from_id)
        history = [m.as_canonical() for m in path_to(fork)]
    return history + project_run(run).messages


def last_choice(thread: Thread, *, among: Collection[str]) -> dict[str, Any]:
    """The generator, model and parameters the thread's latest run of one of the generators
    `among` used (the caller passes the generation registry's CHOICES).

    Runs a stream layer posted under its own name (not one of ours) are no choice to repeat.
    """
    run = (
        Run.objects.filter(thread=thread, generator__in=list(among)).order_by("-created_at").first()
    )
    if run is None:
        return {"generator": "demo", "model": "", "parameters": {}}
    return {"generator": run.generator, "model": run.model, "parameters": dict(run.parameters)}


def trace_page_runs() -> QuerySet[Run]:
    """Runs as the trace page loads them: with their thread (without its metadata), without
    the snapshot, with the id of their first message (`first_message_id`)."""
    first_message = Message.objects.filter(run_id=OuterRef("pk")).order_by("position")
    return (
        Run.objects.select_related("thread")
        .defer("snapshot", "thread__metadata")
        .annotate(first_message_id=Subquery(first_message.values("id")[:1]))
    )


def event_page(run: Run, *, after: int, limit: int) -> list[Event]:
    """Up to limit of the run's stored events after seq after, in order."""
    return list(Event.objects.filter(run_id=run.id, seq__gt=after).order_by("seq")[:limit])


def retry_of(thread: Thread, run_id: str) -> Run | None:
    """The run of thread queued again as a retry of run_id, if any."""
    return Run.objects.filter(thread=thread, metadata__retryOf=run_id).first()


def open_run_of(thread: Thread) -> Run | None:
    """The thread's open run (its `open_run_id`, as the access adapters load threads) if it
    is still open, without its snapshot; else None."""
    run_id = getattr(thread, "open_run_id", None)
    if not run_id:
        return None
    return Run.objects.filter(pk=run_id, status__in=OPEN_STATUSES).defer("snapshot").first()


def last_message_id(run: Run) -> str | None:
    """The id of the run's last message, if it has one."""
    return run.messages.order_by("-position").values_list("pk", flat=True).first()


@dataclass(frozen=True)
class LiveRunFacts:
    """What the live block of a run shows, read in one place: its projection so far, the run
    that retried it (a failed run), and for a queued run the seconds since any worker was
    seen (math.inf: never; None when the run is not queued)."""

    projection: Projection
    requeued_as: Run | None
    worker_silence: float | None


def live_run_facts(run: Run, thread: Thread, *, worker_needed: bool = True) -> LiveRunFacts:
    """The reads behind a run's live block (see LiveRunFacts); worker_needed False (a run an
    outside stream layer takes) skips asking when a worker was last seen."""
    requeued_as = retry_of(thread, run.id) if run.status == RunStatus.FAILED else None
    silence = None
    if run.status == RunStatus.QUEUED and worker_needed:
        since = since_a_worker_was_seen()
        silence = math.inf if since is None else since.total_seconds()
    return LiveRunFacts(project_run(run), requeued_as, silence)
