"""The worker process's periodic chores, which no request does (a GET writes nothing): fail the
runs of workers that died, give back their task rows, store the snapshots of long open runs,
apply the projects' retention periods, audit expired share links and vacuum the tables a
redaction rewrote, and keep experiments going."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection

from transcripts import ledger
from transcripts.db_availability import describe, forget_connection, is_outage
from transcripts.generation import experiments
from transcripts.generation.tasks import reap_expired_runs
from transcripts.ledger.retention import Purge, purge_expired
from transcripts.ledger.vacuum import vacuum_after_redaction
from transcripts.worker.liveness import Liveness, beat_seconds, release_tasks_of_dead_workers

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sweep:
    """What one sweep did: the runs it failed (or re-queued) and those it snapshotted, the task
    rows of dead workers it gave back, the retention purges it ran, the share links whose
    expiry it audited and the tables it vacuumed after a redaction."""

    expired: list[str]
    snapshotted: list[str]
    purges: list[Purge] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    expired_shares: list[str] = field(default_factory=list)
    vacuumed: list[str] = field(default_factory=list)
    experiments: list[str] = field(default_factory=list)


def sweep(*, purge: bool = False, release: bool = False) -> Sweep:
    """The worker process's periodic chores, which no request does (a GET writes nothing);
    with purge, also apply the projects' retention periods; with release, also give back the
    task rows of workers not seen for longer than the lease."""
    return Sweep(
        released=release_tasks_of_dead_workers() if release else [],
        expired=reap_expired_runs(),
        snapshotted=ledger.store_due_snapshots(),
        purges=purge_expired() if purge else [],
        expired_shares=ledger.audit_expired_shares(),
        vacuumed=vacuum_after_redaction(),
        experiments=experiments.sweep(),
    )


def sweep_forever(stop: threading.Event, liveness: Liveness) -> None:
    """Sweep every beat until stop is set (applying retention every
    TRANSCRIPTS_PURGE_EVERY_SECONDS); an outage skips a sweep, never ends the loop."""
    purge_every = float(getattr(settings, "TRANSCRIPTS_PURGE_EVERY_SECONDS", 3600))
    every = beat_seconds()
    next_purge = time.monotonic() + every
    while not stop.wait(every):
        try:
            close_old_connections()
            purge = time.monotonic() >= next_purge
            # Back from an outage, the other workers have not beaten yet: judge them only
            # after a whole lease of this one's own beats.
            done = sweep(purge=purge, release=liveness.may_judge_others())
            if purge:
                next_purge = time.monotonic() + purge_every
            if done.expired:
                logger.warning(
                    "failed %d run(s) whose worker died: %s", len(done.expired), done.expired
                )
            for purged in done.purges:
                if purged.deleted.threads:
                    logger.warning(
                        "retention of %s deleted %s", purged.project.slug, purged.deleted.as_dict()
                    )
        except Exception as exc:
            if is_outage(exc):
                logger.warning("sweep skipped: the database is unavailable (%s)", describe(exc))
                forget_connection()
            else:
                logger.exception("sweep failed; retrying")
    connection.close()
