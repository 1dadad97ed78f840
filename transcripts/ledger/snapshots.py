"""Projection snapshots of open runs, so that reading a long run replays only its tail.

Readers never store them (a GET writes nothing) and appends never pay for them: commit stores
the final one, the generator worker stores its own run's as it streams, and the worker
process's sweeper stores those of runs fed through the API.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F

from transcripts.models import OPEN_STATUSES, Run
from transcripts.projector import Projector
from transcripts.selectors.runs import get_run, projector_for


def _snapshot_every() -> int:
    return int(getattr(settings, "TRANSCRIPTS_SNAPSHOT_EVERY", 0) or 0)


def _snapshot_due(run: Run, last_seq: int) -> bool:
    """Whether to store a snapshot now: every N events, less often as the run grows.

    A snapshot costs as much as the state it holds, so storing one every N events would make
    a long run quadratic; waiting for a quarter of the run's length keeps it linear while
    the tail to replay stays short.
    """
    every = _snapshot_every()
    return bool(every) and last_seq - run.snapshot_seq >= max(every, run.snapshot_seq // 4)


def store_snapshot(run: Run, projector: Projector) -> bool:
    """Keep projector's state as run's snapshot, if the run is open and the state is newer.

    The guard makes concurrent storers harmless: the one that covers more events wins.
    """
    stored = Run.objects.filter(
        pk=run.pk, status__in=OPEN_STATUSES, snapshot_seq__lt=projector.last_seq
    ).update(snapshot=projector.to_snapshot(), snapshot_seq=projector.last_seq)
    return bool(stored)


def store_snapshot_if_due(*, run: Run, last_seq: int | None = None) -> bool:
    """Store the snapshot of run when the events after its last one are due; whether it did.

    run.snapshot_seq is what the caller last knew (last_seq, when given, is the run's last
    seq); it is brought up to date, so a caller can keep asking after every append.
    """
    if not _snapshot_due(run, run.last_seq if last_seq is None else last_seq):
        return False
    current = get_run(run.id)
    run.snapshot_seq = current.snapshot_seq
    if not current.is_open or not _snapshot_due(current, current.last_seq):
        return False
    projector = projector_for(current)
    stored = store_snapshot(current, projector)
    if stored:
        run.snapshot_seq = projector.last_seq
    return stored


def store_due_snapshots() -> list[str]:
    """Store the snapshot of every open run whose tail is due; returns their ids."""
    every = _snapshot_every()
    if not every:
        return []
    # Due runs have at least N events after their snapshot; the rule decides for each.
    candidates = Run.objects.filter(
        status__in=OPEN_STATUSES, last_seq__gte=F("snapshot_seq") + every
    ).only("id", "last_seq", "snapshot_seq")
    return [run.id for run in candidates if store_snapshot_if_due(run=run)]
