"""Leases of generator workers on runs: claim, heartbeat, and failing the runs of dead workers."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict, RunClosed
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.notify import notify
from transcripts.models import OPEN_STATUSES, Run, RunStatus
from transcripts.selectors.runs import get_run


def _lease_is_live(run: Run, now: datetime) -> bool:
    return bool(run.lease_owner) and run.lease_expires_at is not None and run.lease_expires_at > now


def claim_run(*, run: Run | str, worker: str, lease_seconds: float) -> Run:
    """Take a queued run (or an open one whose lease lapsed) for worker, with a lease."""
    with transaction.atomic():
        run = get_run(run, for_update=True)
        now = timezone.now()
        if not run.is_open:
            raise RunClosed(f"the run is {run.status}: nothing to claim", status=run.status)
        if _lease_is_live(run, now) and run.lease_owner != worker:
            raise Conflict(
                "the run is leased by another worker",
                leaseOwner=run.lease_owner,
                leaseExpiresAt=run.lease_expires_at.isoformat() if run.lease_expires_at else None,
            )
        run.lease_owner = worker
        run.lease_expires_at = now + timedelta(seconds=lease_seconds)
        run.status = RunStatus.STREAMING
        run.started_at = run.started_at or now
        run.save(update_fields=["lease_owner", "lease_expires_at", "status", "started_at"])
        notify(run)
    return run


def renew_lease(*, run: Run | str, worker: str, lease_seconds: float) -> Run:
    """Extend worker's lease (the heartbeat); Conflict when the lease was lost or run closed."""
    with transaction.atomic():
        run = get_run(run, for_update=True)
        if not run.is_open:
            raise RunClosed(f"the run is {run.status}", status=run.status)
        if run.lease_owner != worker:
            raise Conflict("the lease is held by another worker", leaseOwner=run.lease_owner)
        run.lease_expires_at = timezone.now() + timedelta(seconds=lease_seconds)
        run.save(update_fields=["lease_expires_at"])
    return run


def expire_leases() -> list[str]:
    """Fail the open runs whose worker stopped renewing its lease; returns their ids."""
    expired: list[str] = []
    candidates = Run.objects.filter(
        status__in=OPEN_STATUSES, lease_expires_at__lt=timezone.now()
    ).values_list("pk", flat=True)
    for run_id in candidates:
        with transaction.atomic():
            run = get_run(run_id, for_update=True)
            now = timezone.now()
            if not run.is_open or run.lease_expires_at is None or run.lease_expires_at >= now:
                continue
            lost = run.lease_owner
            run.lease_expires_at = None
            run.status = RunStatus.FAILED
            run.finished_at = now
            run.error = {
                "message": f"the worker {lost!r} stopped responding (its lease expired)",
                "code": "lease_expired",
            }
            run.save(update_fields=["lease_expires_at", "status", "finished_at", "error"])
            refresh_counters([run.thread_id])
            notify(run)
            expired.append(run.id)
    return expired
