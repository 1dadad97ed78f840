"""The ledger: the one way to write threads, runs, events and messages.

Every caller (API, views, admin, importers, generator workers) goes through these functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Subquery
from django.utils import timezone

from transcripts.errors import (
    Conflict,
    InvalidEvents,
    InvalidInput,
    NotFound,
    Problem,
    RunClosed,
    SeqConflict,
    SeqGap,
    ThreadLocked,
)
from transcripts.events import CheckedEvent, check_events
from transcripts.fields import to_uuid
from transcripts.ids import is_ulid, require_ulid
from transcripts.models import OPEN_STATUSES, Message, Run, RunStatus, Thread
from transcripts.selectors.paths import latest_leaf_below
from transcripts.selectors.runs import get_run, projector_for

HEAD: Any = object()  # begin_run's default fork point: the thread's head.


def run_channel(run_id: str) -> str:
    """The LISTEN/NOTIFY channel of a run."""
    return f"transcripts_run_{run_id.lower()}"


def _notify(run: Run) -> None:
    payload = json.dumps({"lastSeq": run.last_seq, "status": run.status})
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [run_channel(run.id), payload])


def _check_storable(value: Any, field: str) -> None:
    from transcripts.events import to_storable_json

    try:
        to_storable_json(value, field)
    except InvalidEvents as exc:
        raise InvalidInput(exc.problems[0].message, problems=_problem_dicts(exc.problems)) from None


def _check_object(value: Any, field: str) -> dict[str, Any]:
    """A JSON object PostgreSQL can store (None is an empty one), or InvalidInput."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a JSON object", field=field)
    _check_storable(dict(value), field)
    return dict(value)


def _problem_dicts(problems: Sequence[Problem]) -> list[dict[str, str]]:
    return [p.as_dict() for p in problems]


# --- threads -----------------------------------------------------------------------------


def create_thread(
    *,
    title: str = "",
    metadata: Mapping[str, Any] | None = None,
    agents: Mapping[str, Any] | None = None,
    thread_id: str | None = None,
    parent_thread: Thread | None = None,
) -> tuple[Thread, bool]:
    """Create a thread; with a client-chosen id the call is idempotent."""
    if not isinstance(title, str) or len(title) > 500:
        raise InvalidInput("title must be a string of at most 500 characters", field="title")
    _check_storable(title, "title")
    metadata = _check_object(metadata, "metadata")
    agents = _check_object(agents, "agents")
    if thread_id is not None:
        thread_id = require_ulid(thread_id, "id")
        existing = Thread.objects.filter(pk=thread_id).first()
        if existing is not None:
            return existing, False
    with transaction.atomic():
        thread = Thread(
            title=title,
            metadata=dict(metadata or {}),
            agents=dict(agents or {}),
            parent_thread=parent_thread,
        )
        if thread_id is not None:
            thread.id = thread_id
        thread.save(force_insert=True)
    return thread, True


# --- runs --------------------------------------------------------------------------------


def begin_run(
    *,
    thread: Thread,
    fork_from: Any = HEAD,
    run_id: str | None = None,
    status: str = RunStatus.STREAMING,
    generator: str = "",
    model: str = "",
    parameters: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> tuple[Run, bool]:
    """Begin a run forked from fork_from (a message id, None for a new root, HEAD by default).

    With a client-chosen run_id the call is idempotent: the same id returns the same run.
    """
    if status not in (RunStatus.QUEUED, RunStatus.STREAMING):
        raise InvalidInput("a run begins queued or streaming", field="status")
    metadata = _check_object(metadata, "metadata")
    parameters = _check_object(parameters, "parameters")
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
            fork_id = fork_from.id if isinstance(fork_from, Message) else fork_from
            fork_id = require_ulid(fork_id, "forkFromMessageId")
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
                    # Which thread is not said: the caller may not be allowed to see it.
                    raise Conflict("a run with this id exists in another thread", runId=run_id)
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
            model=model,
            parameters=dict(parameters or {}),
            metadata=dict(metadata or {}),
            created_at=now,
            started_at=now if status == RunStatus.STREAMING else None,
        )
        if run_id is not None:
            run.id = run_id
        run.save(force_insert=True)
        Thread.objects.filter(pk=thread.pk).update(updated_at=now)
    return run, True


@dataclass(frozen=True)
class AppendResult:
    """What an append did."""

    last_seq: int
    accepted: int
    duplicates: int


def _stored_likeness(run_id: str, events: Sequence[CheckedEvent]) -> dict[int, tuple[bool, Any]]:
    """For each of events already stored: whether kind and data are the same, and its at.

    The data are compared as jsonb, as stored: a number jsonb spells differently on the way
    back (1e23 comes back as 23 digits) is still the same, and true is not 1.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.seq, e.kind = u.kind AND e.data = u.data::jsonb, e.at"
            " FROM transcripts_event e"
            " JOIN unnest(%s::integer[], %s::text[], %s::text[]) AS u(seq, kind, data)"
            " ON e.seq = u.seq WHERE e.run_id = %s",
            [
                [e.seq for e in events],
                [e.kind for e in events],
                [e.data_json for e in events],
                to_uuid(run_id),
            ],
        )
        return {seq: (same, at) for seq, same, at in cursor.fetchall()}


def _same_event(stored: tuple[bool, Any], new: CheckedEvent) -> bool:
    same, at = stored
    return bool(same) and (new.at is None or new.at == at)


def copy_event_rows(rows: Iterable[tuple[Any, ...]]) -> None:
    """COPY (thread uuid, run uuid, seq, kind, data JSON, at) rows into the event log."""
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            "COPY transcripts_event (thread_id, run_id, seq, kind, data, at) FROM STDIN"
        ) as copy,
    ):
        for row in rows:
            copy.write_row(row)


def _copy_events(run: Run, events: Sequence[CheckedEvent], now: datetime) -> None:
    thread_uuid, run_uuid = to_uuid(run.thread_id), to_uuid(run.id)
    copy_event_rows(
        (thread_uuid, run_uuid, e.seq, e.kind, e.data_json, e.at or now) for e in events
    )


def _lock_for_append(run: Run | str) -> tuple[Run, bool]:
    """Lock the run row and read what an append needs (and whether its thread is locked).

    Appends are the hot path: one hand-written query instead of the ORM's.
    """
    run_id = run.id if isinstance(run, Run) else require_ulid(run, "runId")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.id, r.thread_id, r.fork_from_id, r.status, r.last_seq, r.started_at,"
            " r.first_event_at, r.snapshot_seq, t.locked FROM transcripts_run r"
            " JOIN transcripts_thread t ON t.id = r.thread_id"
            " WHERE r.id = %s FOR UPDATE OF r",
            [to_uuid(run_id)],
        )
        row = cursor.fetchone()
    if row is None:
        raise NotFound(f"run {run_id} does not exist", runId=run_id)
    read = dict(zip(_APPEND_FIELDS, [_ulid_str(v) for v in row[:3]] + list(row[3:-1]), strict=True))
    # from_db wants the values in field order; the fields not read here (the snapshot above
    # all) load on first access.
    names = [f.attname for f in Run._meta.concrete_fields if f.attname in read]
    run = Run.from_db(connection.alias, names, [read[name] for name in names])
    return run, bool(row[-1])


_APPEND_FIELDS = (
    "id",
    "thread_id",
    "fork_from_id",
    "status",
    "last_seq",
    "started_at",
    "first_event_at",
    "snapshot_seq",
)


def _ulid_str(value: Any) -> str | None:
    from ulid import ULID

    return None if value is None else str(ULID.from_uuid(value))


def _refuse_taken_message_ids(events: Sequence[CheckedEvent]) -> None:
    """Refuse events that ask for the id of a message already in the database.

    The projector keeps a requested id, so such a run could never be committed; saying so
    at append time leaves the run usable.
    """
    requested = {
        str(event.data.get(key)).upper()
        for event in events
        for kind, key in (("message", "id"), ("message-start", "messageId"))
        if event.kind == kind and is_ulid(event.data.get(key))
    }
    if not requested:
        return
    taken = sorted(
        str(pk) for pk in Message.objects.filter(pk__in=requested).values_list("pk", flat=True)
    )
    if taken:
        raise Conflict(
            "message ids are already used by other messages: give each message a new id or none",
            messageIds=taken,
        )


def append_events(*, run: Run | str, events: Any, start: bool = True) -> AppendResult:
    """Append a batch of events after the run's last seq, all or nothing.

    The first events start a queued run (it becomes streaming) unless start is False: an
    edit's user message is stored while the run still waits for its generator.

    An exact re-send of stored events is a no-op; a gap, the same seq with other content, or
    new events for a closed run raise a Conflict saying which seq was expected.
    """
    try:
        checked = check_events(events)
    except InvalidEvents as exc:
        raise InvalidInput(
            f"invalid events: {exc}", problems=_problem_dicts(exc.problems)
        ) from None
    with transaction.atomic():
        run, thread_locked = _lock_for_append(run)
        if not checked:
            return AppendResult(run.last_seq, 0, 0)
        last_seq = run.last_seq
        first = checked[0].seq
        expected = last_seq + 1
        if first > expected:
            raise SeqGap(
                f"seq {first} leaves a gap: the run's last seq is {last_seq}, expected {expected}",
                expectedSeq=expected,
                lastSeq=last_seq,
            )
        overlap = [e for e in checked if e.seq <= last_seq]
        fresh = checked[len(overlap) :]
        if overlap:
            stored = _stored_likeness(run.id, overlap)
            for event in overlap:
                if event.seq not in stored or not _same_event(stored[event.seq], event):
                    raise SeqConflict(
                        f"seq {event.seq} is already stored with other content;"
                        f" the next seq is {expected}",
                        expectedSeq=expected,
                        lastSeq=last_seq,
                        seq=event.seq,
                    )
        if fresh:
            if thread_locked:
                raise ThreadLocked("the thread is locked: no new events", threadId=run.thread_id)
            if not run.is_open:
                raise RunClosed(
                    f"the run is {run.status}: no new events can be appended",
                    status=run.status,
                    expectedSeq=expected,
                    lastSeq=last_seq,
                )
            _refuse_taken_message_ids(fresh)
            now = timezone.now()
            run.last_seq = fresh[-1].seq
            run.first_event_at = run.first_event_at or now
            if run.status == RunStatus.QUEUED and start:
                run.status = RunStatus.STREAMING
                run.started_at = run.started_at or now
            inline: Sequence[CheckedEvent] = fresh
            if len(fresh) > _INLINE_INSERT_MAX:
                _copy_events(run, fresh, now)
                inline = ()
            # Snapshots are stored by readers (project_run), off this hot path.
            _store_append(run, inline, now)
    return AppendResult(run.last_seq, len(fresh), len(overlap))


# Up to this many events ride along with the run update in one statement; more go by COPY,
# which costs an extra round trip but less per row.
_INLINE_INSERT_MAX = 16


def _store_append(run: Run, events: Sequence[CheckedEvent], now: datetime) -> None:
    """Insert the events, update the run and notify listeners, in one round trip.

    The notification is delivered when the transaction commits.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH inserted AS (
                INSERT INTO transcripts_event (thread_id, run_id, seq, kind, data, at)
                SELECT %(thread)s, %(id)s, u.seq, u.kind, u.data::jsonb, u.at
                FROM unnest(%(seqs)s::integer[], %(kinds)s::text[], %(datas)s::text[],
                    %(ats)s::timestamptz[]) AS u(seq, kind, data, at)
            ), updated AS (
                UPDATE transcripts_run SET last_seq = %(last_seq)s,
                    first_event_at = %(first_event_at)s, status = %(status)s,
                    started_at = %(started_at)s
                WHERE id = %(id)s RETURNING id
            )
            SELECT pg_notify(%(channel)s, %(payload)s) FROM updated
            """,
            {
                "thread": to_uuid(run.thread_id),
                "id": to_uuid(run.id),
                "seqs": [e.seq for e in events],
                "kinds": [e.kind for e in events],
                "datas": [e.data_json for e in events],
                "ats": [e.at or now for e in events],
                "last_seq": run.last_seq,
                "first_event_at": run.first_event_at,
                "status": run.status,
                "started_at": run.started_at,
                "channel": run_channel(run.id),
                "payload": json.dumps({"lastSeq": run.last_seq, "status": run.status}),
            },
        )


def _snapshot_due(run: Run, last_seq: int) -> bool:
    """Whether to store a snapshot now: every N events, less often as the run grows.

    A snapshot costs as much as the state it holds, so storing one every N events would make
    a long run quadratic; waiting for a quarter of the run's length keeps it linear while
    the tail to replay stays short.
    """
    every = int(getattr(settings, "TRANSCRIPTS_SNAPSHOT_EVERY", 0) or 0)
    return bool(every) and last_seq - run.snapshot_seq >= max(every, run.snapshot_seq // 4)


# --- active path -------------------------------------------------------------------------

_PATH_TO = """
    WITH RECURSIVE path AS (
        SELECT id, parent_id FROM transcripts_message WHERE id = %(leaf)s
        UNION ALL
        SELECT m.id, m.parent_id FROM transcripts_message m JOIN path p ON m.id = p.parent_id
    )
"""


def _activate_path(thread: Thread, leaf_id: str | None) -> None:
    """Make the path from the root to leaf_id the thread's active path (None: no path)."""
    with connection.cursor() as cursor:
        if leaf_id is None:
            cursor.execute(
                "UPDATE transcripts_message SET active = false WHERE thread_id = %s AND active",
                [to_uuid(thread.id)],
            )
            return
        params = {"leaf": to_uuid(leaf_id), "thread": to_uuid(thread.id)}
        cursor.execute(
            _PATH_TO + "UPDATE transcripts_message SET active = false WHERE thread_id = %(thread)s"
            " AND active AND id NOT IN (SELECT id FROM path)",
            params,
        )
        cursor.execute(
            _PATH_TO + "UPDATE transcripts_message SET active = true"
            " WHERE id IN (SELECT id FROM path) AND NOT active",
            params,
        )
        cursor.execute(_REVIVE, params)


# A superseded run whose messages are back on the active path (its branch was continued or
# restored) is the committed run at its fork point again, and the run that replaced it there
# is superseded in turn: otherwise the active path would run through "superseded" runs.
_REVIVE = """
    WITH revived AS (
        SELECT DISTINCT r.id, r.fork_from_id FROM transcripts_run r
        JOIN transcripts_message m ON m.run_id = r.id
        WHERE m.thread_id = %(thread)s AND m.active AND r.status = 'superseded'
    ), replaced AS (
        UPDATE transcripts_run o SET status = 'superseded', superseded_by_id = v.id
        FROM revived v
        WHERE o.thread_id = %(thread)s AND o.status = 'committed'
            AND o.fork_from_id IS NOT DISTINCT FROM v.fork_from_id
    )
    UPDATE transcripts_run SET status = 'committed', superseded_by_id = NULL
    WHERE id IN (SELECT id FROM revived)
"""


# --- lifecycle ---------------------------------------------------------------------------


def _lock_run_and_thread(run: Run | str) -> tuple[Run, Thread]:
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


@transaction.atomic
def commit_run(*, run: Run | str) -> Run:
    """Materialize the run's messages as the active continuation of its fork point.

    Idempotent. The old continuation stays in the tree off the active path, and the other
    committed runs at the same fork point become superseded by this one.
    """
    run, thread = _lock_run_and_thread(run)
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        return run
    if run.status not in OPEN_STATUSES:
        raise RunClosed(f"a {run.status} run cannot be committed", status=run.status)
    if thread.locked:
        raise ThreadLocked("the thread is locked", threadId=thread.id)
    projector = projector_for(run)
    projection = projector.result()
    ids = [m["id"] for m in projection.messages]
    taken = list(Message.objects.filter(pk__in=ids).values_list("pk", flat=True))
    if taken:
        raise Conflict("message ids are already used by other messages", messageIds=taken)
    fork = Message.objects.filter(pk=run.fork_from_id).first() if run.fork_from_id else None
    base_depth = fork.depth + 1 if fork else 0
    if fork is None:
        Message.objects.filter(thread=thread, active=True).update(active=False)
    elif fork.active:
        Message.objects.filter(thread=thread, active=True, depth__gt=fork.depth).update(
            active=False
        )
    else:
        _activate_path(thread, fork.id)
    rows = [
        Message(
            id=m["id"],
            thread=thread,
            run=run,
            parent_id=m["parentMessageId"],
            depth=base_depth + position,
            position=position,
            role=m["role"],
            parts=m["parts"],
            metadata=m["metadata"],
            created_at=datetime.fromisoformat(m["createdAt"]),
            active=True,
            first_seq=first_seq,
            last_seq=last_seq,
        )
        for position, (m, (first_seq, last_seq)) in enumerate(
            zip(projection.messages, projection.seq_ranges, strict=True)
        )
    ]
    Message.objects.bulk_create(rows, batch_size=500)
    _supersede_others(run)
    now = timezone.now()
    thread.head = rows[-1] if rows else fork
    thread.updated_at = now
    run.status = RunStatus.COMMITTED
    run.finished_at = now
    run.usage = projection.metadata.get("usage", {})
    run.snapshot = projector.to_snapshot()
    run.snapshot_seq = projector.last_seq
    # One round trip for the thread, the run and the notification.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH moved AS (
                UPDATE transcripts_thread SET head_id = %(head)s, updated_at = %(now)s
                WHERE id = %(thread)s
            ), committed AS (
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
                "thread": to_uuid(thread.id),
                "status": run.status,
                "usage": json.dumps(run.usage),
                "snapshot": json.dumps(run.snapshot),
                "snapshot_seq": run.snapshot_seq,
                "run": to_uuid(run.id),
                "channel": run_channel(run.id),
                "payload": json.dumps({"lastSeq": run.last_seq, "status": run.status}),
            },
        )
    return run


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
        _notify(run)
    return run


def fail_run(*, run: Run | str, error: Any) -> Run:
    """Mark an open run failed; its events stay, nothing is materialized."""
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        raise InvalidInput("error must be a string or an object with a message", field="error")
    _check_storable(error, "error")
    return _close_run(run, RunStatus.FAILED, error)


def cancel_run(*, run: Run | str) -> Run:
    """Cancel an open run; its events stay, nothing is materialized."""
    return _close_run(run, RunStatus.CANCELLED, None)


@transaction.atomic
def restore_run(*, run: Run | str) -> Run:
    """Make a run's branch the active one again.

    A superseded run becomes committed and supersedes the run that replaced it; a committed
    run whose messages left the active path (a later run forked above its end) is brought
    back onto it. From the run's last message the path follows the most recent descendants.
    """
    run, thread = _lock_run_and_thread(run)
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
    _activate_path(thread, leaf)
    thread.head_id = leaf
    thread.updated_at = timezone.now()
    thread.save(update_fields=["head", "updated_at"])
    _notify(run)
    return run


# --- leases (generator workers) ------------------------------------------------------------


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
        _notify(run)
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
            _notify(run)
            expired.append(run.id)
    return expired
