"""Generating one queued run: claim it, stream its generator's events into the ledger with a
heartbeat on the lease, commit (or fail it). The `generate_run` task calls it, in a worker
process (`transcripts.worker`)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from django.db import Error as DatabaseLayerError
from django.db import connection

from transcripts import ledger, selectors
from transcripts.db_availability import describe, forget_connection, is_outage, patiently
from transcripts.errors import Conflict, DomainError, GeneratorError, RunClosed
from transcripts.generation.generators import GenerationRequest, get_generator
from transcripts.generation.leases import lease_seconds, worker_name
from transcripts.jsonvalue import JsonObject
from transcripts.models import OPEN_STATUSES, Run, RunStatus

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.05
FLUSH_EVENTS = 64


class _Heartbeat:
    """Renews the worker's lease in the background, so a generator that is slow to produce
    its next event (a model thinking for a minute) keeps its run; notices a cancel or a lost
    lease."""

    def __init__(self, run_id: str, worker: str) -> None:
        self.run_id = run_id
        self.worker = worker
        self.lost: DomainError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        seconds = lease_seconds()
        try:
            while not self._stop.wait(max(0.1, seconds / 3)):
                try:
                    ledger.renew_lease(run=self.run_id, worker=self.worker, lease_seconds=seconds)
                except DomainError as exc:  # cancelled, failed, or leased by another worker
                    self.lost = exc
                    return
                except Exception as exc:  # a database hiccup: the next beat tries again
                    if is_outage(exc):
                        logger.warning("could not renew the lease of run %s", self.run_id)
                        forget_connection()
                    else:
                        logger.exception("could not renew the lease of run %s", self.run_id)
        finally:
            connection.close()


class _Batcher:
    """Numbers events and appends them in small batches (every ~50 ms or 64 events)."""

    def __init__(self, run: Run, heartbeat: _Heartbeat) -> None:
        self.run = run
        self.heartbeat = heartbeat
        self.next_seq = run.last_seq + 1
        self.pending: list[JsonObject] = []
        self.flushed_any = False
        self.last_flush = time.monotonic()

    def add(self, kind: str, data: JsonObject) -> None:
        if self.heartbeat.lost is not None:
            raise self.heartbeat.lost
        self.pending.append({"seq": self.next_seq, "kind": kind, "data": data})
        self.next_seq += 1
        due = time.monotonic() - self.last_flush >= FLUSH_SECONDS
        if not self.flushed_any or due or len(self.pending) >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            appended = ledger.append_events(run=self.run, events=self.pending)
            self.pending = []
            self.flushed_any = True
            # The worker keeps its own run's snapshot, so readers of a long run replay little.
            ledger.store_snapshot_if_due(run=self.run, last_seq=appended.last_seq)
        self.last_flush = time.monotonic()


def generate(run_id: str, *, worker: str | None = None) -> str:
    """Claim the run, stream its generator's events into the ledger and commit; returns status.

    A database outage before the claim is waited out; one after it fails the run once the
    database is back, since a generator cannot resume an answer where it was cut off.
    """
    worker = worker or worker_name()
    run = patiently(lambda: _claim(run_id, worker), what=f"claiming run {run_id}")
    if run is None:
        return "skipped"
    try:
        return _stream(run, worker)
    except DatabaseLayerError as exc:
        if not is_outage(exc):
            raise
        logger.warning("run %s was cut off by a database outage (%s)", run.id, describe(exc))
        message = "the database went away while this run was being generated"
        return patiently(
            lambda: _fail(run.id, message, "database_unavailable"), what=f"failing run {run.id}"
        )


def _claim(run_id: str, worker: str) -> Run | None:
    """The run, leased to worker; None when it is not this worker's to generate."""
    if Run.objects.filter(pk=run_id, status=RunStatus.STREAMING).exists():
        # Started by an attempt that was cut off (a killed worker's task given back): the
        # generator would start its answer over after what is stored, so the run's lease
        # decides instead (failed, or queued again as a new run).
        logger.info("run %s not generated: an earlier attempt started it", run_id)
        return None
    try:
        return ledger.claim_run(run=run_id, worker=worker, lease_seconds=lease_seconds())
    except (RunClosed, Conflict) as exc:
        logger.info("run %s not generated: %s", run_id, exc)
        return None


def _stream(run: Run, worker: str) -> str:
    """Stream the claimed run's generator into the ledger and commit; returns status."""
    request = GenerationRequest(
        run_id=run.id,
        messages=selectors.conversation_for(run),
        model=run.model,
        parameters=dict(run.parameters),
    )
    with _Heartbeat(run.id, worker) as heartbeat:
        batcher = _Batcher(run, heartbeat)
        try:
            for kind, data in get_generator(run.generator).stream(request):
                batcher.add(kind, data)
            batcher.flush()
            if heartbeat.lost is not None:
                raise heartbeat.lost
            ledger.commit_run(run=run.id)
            return RunStatus.COMMITTED
        except RunClosed:
            # Cancelled (or closed otherwise) while streaming: stop quietly, keep what was stored.
            return Run.objects.get(pk=run.id).status
        except Conflict as exc:
            if exc is heartbeat.lost:  # another worker holds the run now: leave it to them
                logger.warning("lost the lease of run %s: %s", run.id, exc)
                return "lost"
            closed = Run.objects.filter(pk=run.id).exclude(status__in=OPEN_STATUSES)
            status = closed.values_list("status", flat=True).first()
            if status is not None:  # stopped while this batch was on its way: Stop keeps the rest
                return status
            return _fail(run.id, str(exc), type(exc).__name__)
        except (GeneratorError, DomainError) as exc:
            return _fail(run.id, str(exc), type(exc).__name__)
        except Exception as exc:
            if is_outage(exc):
                raise
            logger.exception("generator %s crashed on run %s", run.generator, run.id)
            return _fail(run.id, f"{type(exc).__name__}: {exc}", "generator_crashed")


def _fail(run_id: str, message: str, code: str) -> str:
    with contextlib.suppress(DomainError):
        ledger.fail_run(run=run_id, error={"message": message, "code": code})
    return RunStatus.FAILED
