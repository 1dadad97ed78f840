"""Beginning runs: a new generation attempt forked from a message of a thread."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, ThreadLocked
from transcripts.ids import require_ulid
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.storable import check_object
from transcripts.models import Message, Run, RunOrigin, RunStatus, Thread

HEAD = object()  # begin_run's default fork point: the thread's head.


def begin_run(
    *,
    thread: Thread,
    fork_from: object = HEAD,
    run_id: str | None = None,
    status: str = RunStatus.STREAMING,
    generator: str = "",
    model: str = "",
    parameters: Mapping[str, object] | None = None,
    metadata: Mapping[str, object] | None = None,
    origin: str = RunOrigin.API,
    touch: bool = True,
) -> tuple[Run, bool]:
    """Begin a run forked from fork_from (a message id, None for a new root, HEAD by default).

    With a client-chosen run_id the call is idempotent: the same id returns the same run.
    origin says who started it (an agent through the API, or a member in the browser), which
    decides who may stop it. Without touch the thread's updated time stays (an experiment's
    candidates do not reorder the thread list).
    """
    if status not in (RunStatus.QUEUED, RunStatus.STREAMING):
        raise InvalidInput("a run begins queued or streaming", field="status")
    metadata = check_object(metadata, "metadata")
    parameters = check_object(parameters, "parameters")
    if run_id is not None:
        run_id = require_ulid(run_id, "id")
    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread.pk)
        if thread.locked:
            raise ThreadLocked("the thread is locked: no new runs", threadId=thread.id)
        if fork_from is HEAD:
            fork_id = thread.head_id
        elif fork_from is None:
            fork_id = None
        else:
            fork_id = require_ulid(
                fork_from.id if isinstance(fork_from, Message) else fork_from, "forkFromMessageId"
            )
            if not Message.objects.filter(pk=fork_id, thread=thread).exists():
                raise InvalidInput(
                    "the fork point must be a message of this thread",
                    field="forkFromMessageId",
                    forkFromMessageId=fork_id,
                )
        if run_id is not None:
            existing = Run.objects.filter(pk=run_id).first()
            if existing is not None:
                # A retry that asked for "the head" must find its run even after the head moved
                # (typically because that very run was committed in between).
                same_fork = fork_from is HEAD or existing.fork_from_id == fork_id
                if existing.thread_id != thread.id:
                    # Taken in another thread, of this project or another, seen or not: the
                    # same answer, which says nothing of where.
                    raise Conflict("this run id cannot be used: choose another", runId=run_id)
                if not same_fork:
                    raise Conflict(
                        "a run with this id exists at another fork point",
                        runId=run_id,
                        forkFromMessageId=existing.fork_from_id,
                    )
                return existing, False
        now = timezone.now()
        run = Run(
            thread=thread,
            fork_from_id=fork_id,
            status=status,
            generator=generator,
            origin=origin,
            model=model,
            parameters=dict(parameters or {}),
            metadata=dict(metadata or {}),
            created_at=now,
            started_at=now if status == RunStatus.STREAMING else None,
        )
        if run_id is not None:
            run.id = run_id
        run.save(force_insert=True)
        if touch:
            Thread.objects.filter(pk=thread.pk).update(updated_at=now)
        refresh_counters([thread.id])
    return run, True
