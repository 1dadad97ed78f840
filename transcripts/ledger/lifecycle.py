"""A run's life after its events: commit (materialize and branch), fail, cancel, stop, restore."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection, transaction
from django.db.models import Subquery
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, NotFound, RunClosed, ThreadLocked
from transcripts.ids import require_ulid, to_uuid
from transcripts.ledger.active_path import activate_path
from transcripts.ledger.append import append_events
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.notify import change_payload, notify, run_channel
from transcripts.ledger.storable import check_storable
from transcripts.models import OPEN_STATUSES, Event, Message, Run, RunOrigin, RunStatus, Thread
from transcripts.selectors.paths import latest_leaf_below
from transcripts.selectors.runs import get_run, projector_for


def lock_run_and_thread(run: Run | str) -> tuple[Run, Thread]:
    """Lock the run's thread, then the run (the order begin_run locks in), or NotFound."""
    run_id = run.id if isinstance(run, Run) else require_ulid(run, "runId")
    # The thread first (as begin_run does), then the run: one query each.
    of_run = Run.objects.filter(pk=run_id).values("thread_id")
    thread = Thread.objects.select_for_update().filter(pk=Subquery(of_run)).first()
    if thread is None:
        raise NotFound(f"run {run_id} does not exist", runId=run_id)
    locked = Run.objects.select_for_update().get(pk=run_id)
    locked.thread = thread
    return locked, thread


def _supersede_others(run: Run) -> None:
    Run.objects.filter(
        thread_id=run.thread_id, fork_from_id=run.fork_from_id, status=RunStatus.COMMITTED
    ).exclude(pk=run.pk).update(status=RunStatus.SUPERSEDED, superseded_by=run)


def is_candidate(run: Run) -> bool:
    """Whether run is an experiment's candidate: committed beside the active path, not on it."""
    return isinstance(run.metadata, dict) and bool(run.metadata.get("experiment"))


@transaction.atomic
def commit_run(*, run: Run | str) -> Run:
    """Materialize the run's messages as the active continuation of its fork point.

    Idempotent. The old continuation stays in the tree off the active path, and the other
    committed runs at the same fork point become superseded by this one. An experiment's
    candidate is materialized beside the active path instead: a superseded branch at its fork
    point (Restore, or adopting it, makes it the active one), the thread's head unchanged.
    """
    run, thread = lock_run_and_thread(run)
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        return run
    if run.status not in OPEN_STATUSES:
        raise RunClosed(f"a {run.status} run cannot be committed", status=run.status)
    if thread.locked:
        raise ThreadLocked("the thread is locked", threadId=thread.id)
    aside = is_candidate(run)
    projector = projector_for(run)
    projection = projector.result()
    ids = [m["id"] for m in projection.messages]
    taken = list(Message.objects.filter(pk__in=ids).values_list("pk", flat=True))
    if taken:
        raise Conflict("message ids are already used by other messages", messageIds=taken)
    fork = Message.objects.filter(pk=run.fork_from_id).first() if run.fork_from_id else None
    base_depth = fork.depth + 1 if fork else 0
    if aside:
        pass
    elif fork is None:
        Message.objects.filter(thread=thread, active=True).update(active=False)
    elif fork.active:
        Message.objects.filter(thread=thread, active=True, depth__gt=fork.depth).update(
            active=False
        )
    else:
        activate_path(thread, fork.id)
    rows = [
        Message.from_projection(
            projected,
            thread=thread,
            run=run,
            depth=base_depth + position,
            position=position,
            seq_range=seq_range,
            active=not aside,
        )
        for position, (projected, seq_range) in enumerate(
            zip(projection.messages, projection.seq_ranges, strict=True)
        )
    ]
    Message.objects.bulk_create(rows, batch_size=500)
    if not aside:
        _supersede_others(run)
    now = timezone.now()
    if not aside:
        thread.head = rows[-1] if rows else fork
        thread.updated_at = now
    run.status = RunStatus.SUPERSEDED if aside else RunStatus.COMMITTED
    run.finished_at = now
    run.usage = projection.metadata.get("usage", {})
    # The final snapshot: later readers of the run replay nothing.
    run.snapshot = projector.to_snapshot()
    run.snapshot_seq = projector.last_seq
    # One round trip for the thread, the run and the notification. A candidate leaves the
    # thread row alone: refresh_counters below is then its only update of it in this
    # transaction, which spares the commit a deferred check of the thread's project (taken
    # when a row is updated twice), a lock the experiment's other writers would queue on.
    moved = "" if aside else _MOVE_HEAD
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH {moved} committed AS (
                UPDATE transcripts_run SET status = %(status)s, finished_at = %(now)s,
                    usage = %(usage)s::jsonb, snapshot = %(snapshot)s::jsonb,
                    snapshot_seq = %(snapshot_seq)s
                WHERE id = %(run)s RETURNING id
            )
            SELECT pg_notify(%(channel)s, %(payload)s) FROM committed
            """,
            {
                "head": to_uuid(thread.head_id) if thread.head_id else None,
                "now": now,
                "updated": thread.updated_at,
                "thread": to_uuid(thread.id),
                "status": run.status,
                "usage": json.dumps(run.usage),
                "snapshot": json.dumps(run.snapshot),
                "snapshot_seq": run.snapshot_seq,
                "run": to_uuid(run.id),
                "channel": run_channel(run.id),
                "payload": change_payload(run),
            },
        )
    refresh_counters([thread.id])
    return run


_MOVE_HEAD = """
    moved AS (
        UPDATE transcripts_thread SET head_id = %(head)s, updated_at = %(updated)s
        WHERE id = %(thread)s
    ),"""


def _close_run(run: Run | str, status: str, error: dict[str, Any] | None) -> Run:
    with transaction.atomic():
        run = get_run(run, for_update=True)
        if run.status == status:
            return run
        if not run.is_open:
            raise RunClosed(f"a {run.status} run cannot become {status}", status=run.status)
        run.status = status
        run.error = error
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        refresh_counters([run.thread_id])
        notify(run)
    return run


def fail_run(*, run: Run | str, error: Any) -> Run:
    """Mark an open run failed; its events stay, nothing is materialized."""
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise InvalidInput("error must be a string or an object with a message", field="error")
    check_storable(error, "error")
    return _close_run(run, RunStatus.FAILED, error)


def cancel_run(*, run: Run | str) -> Run:
    """Cancel an open run; its events stay, nothing is materialized."""
    return _close_run(run, RunStatus.CANCELLED, None)


STOPPED = "stopped"
# A step that ended on one of these finished its answer; any other end (tool calls, or no
# step-finished at all) means the generator still had something to say.
_ANSWER_ENDS = frozenset({"stop", "length", "content-filter", "error", STOPPED})


def _finished_answer(run: Run) -> bool:
    last = Event.objects.filter(run_id=run.id, seq=run.last_seq).values("kind", "data").first()
    return bool(
        last
        and last["kind"] == "step-finished"
        and (last["data"] or {}).get("finishReason") in _ANSWER_ENDS
    )


@transaction.atomic
def stop_run(*, run: Run | str) -> Run:
    """Stop an open run started in the browser, keeping what streamed.

    Its messages so far are committed like any branch (they become the active path: the user
    stopped to read them); its last assistant message gets the finish reason "stopped" and the
    run `metadata.stopped`. A run that projected no message, an agent's run (its log is the
    agent's) and a run of a locked or hidden thread (moderation adds nothing to it) are
    cancelled, as cancel_run does. Idempotent.
    """
    run, thread = lock_run_and_thread(run)
    if run.status == RunStatus.CANCELLED or run.metadata.get(STOPPED):
        return run
    if not run.is_open:
        raise RunClosed(f"a {run.status} run cannot be stopped", status=run.status)
    projection = projector_for(run).result()
    if run.origin != RunOrigin.WEB or thread.locked or thread.hidden or not projection.messages:
        return cancel_run(run=run)
    if _finished_answer(run):  # the answer was complete, only its commit had not happened
        return commit_run(run=run.id)
    if any(m["role"] == "assistant" for m in projection.messages):
        # An event, not a patched row: exports and replays of the run say it was stopped too.
        stopped = {"seq": run.last_seq + 1, "kind": "step-finished"}
        append_events(run=run, events=[{**stopped, "data": {"finishReason": STOPPED}}])
    run.metadata = {**run.metadata, STOPPED: True}
    Run.objects.filter(pk=run.id).update(metadata=run.metadata)
    return commit_run(run=run.id)


@transaction.atomic
def restore_run(*, run: Run | str) -> Run:
    """Make a run's branch the active one again.

    A superseded run becomes committed and supersedes the run that replaced it; a committed
    run whose messages left the active path (a later run forked above its end) is brought
    back onto it. From the run's last message the path follows the most recent descendants.
    """
    run, thread = lock_run_and_thread(run)
    if run.status not in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        raise Conflict(f"only a superseded run can be restored, not a {run.status} one")
    last = run.messages.order_by("-position").values_list("pk", "active").first()
    if run.status == RunStatus.COMMITTED and (last is None or last[1]):
        return run
    if thread.locked:
        raise ThreadLocked("the thread is locked", threadId=thread.id)
    leaf = latest_leaf_below(last[0]) if last else run.fork_from_id
    if run.status == RunStatus.SUPERSEDED:
        _supersede_others(run)
        run.status = RunStatus.COMMITTED
        run.superseded_by = None
        run.save(update_fields=["status", "superseded_by"])
    activate_path(thread, leaf)
    thread.head_id = leaf
    thread.updated_at = timezone.now()
    thread.save(update_fields=["head", "updated_at"])
    refresh_counters([thread.id])
    notify(run)
    return run
