"""Appending events to a run: the hot path, all or nothing, safe to retry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from django.db import connection, transaction
from django.utils import timezone

from transcripts.errors import (
    Conflict,
    InvalidEvents,
    InvalidInput,
    NotFound,
    RunClosed,
    SeqConflict,
    SeqGap,
    ThreadLocked,
)
from transcripts.events import CheckedEvent, check_events
from transcripts.ids import is_ulid, require_ulid, to_uuid, ulid_of
from transcripts.ledger.bulk_copy import EVENT_COLUMNS, copy_lines, event_lines
from transcripts.ledger.notify import change_payload, change_payload_sql, run_channel
from transcripts.ledger.quotas import EventCharge, charge_cte, check_charged
from transcripts.ledger.storable import problem_dicts
from transcripts.models import Message, Run, RunStatus

# The largest seq the event and run columns hold (PostgreSQL integer).
MAX_SEQ = 2**31 - 1
# Up to this many events ride along with the run update in one statement; more go by COPY,
# which costs an extra round trip but less per row.
_INLINE_INSERT_MAX = 16


@dataclass(frozen=True)
class AppendResult:
    """What an append did."""

    last_seq: int
    accepted: int
    duplicates: int


@dataclass(frozen=True)
class Reach:
    """Threads a caller may append to, as the access policy decides it for one project: its
    threads that are not hidden (visible) and its hidden ones (hidden)."""

    project_id: int
    visible: bool
    hidden: bool


class OutOfReach(NotFound):
    """The run of an append given a reach is unknown or outside it: the caller's access check
    says which (404, or 403 for a missing scope); nothing was stored."""


def append_events(
    *, run: Run | str, events: object, start: bool = True, within: Reach | None = None
) -> AppendResult:
    """Append a batch of events after the run's last seq, all or nothing.

    The first events start a queued run (it becomes streaming) unless start is False: an
    edit's user message is stored while the run still waits for its generator. With within,
    only to a run of a thread in that reach, checked as the run is locked (no query of its
    own): OutOfReach otherwise.

    An exact re-send of stored events is a no-op; a gap, the same seq with other content, or
    new events for a closed run raise a Conflict saying which seq was expected.
    """
    try:
        checked = check_events(events)
    except InvalidEvents as exc:
        raise InvalidInput(f"invalid events: {exc}", problems=problem_dicts(exc.problems)) from None
    _refuse_seqs_past_the_column(checked)
    fast = _append_in_one_statement(run, checked, start=start, within=within)
    if fast is not None:
        return fast
    with transaction.atomic():
        run, thread_locked = _lock_for_append(run, within)
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
            _refuse_taken_message_ids(fresh, thread_id=run.thread_id)
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
            # Snapshots are stored by commit and by the worker (ledger.snapshots), off this path.
            _store_append(run, inline, now)
    return AppendResult(run.last_seq, len(fresh), len(overlap))


def append_at_once(
    *, run: str, events: object, within: Reach, charge: EventCharge | None = None
) -> AppendResult | None:
    """The common append (events right after the run's last seq, to an open run of a thread
    within reach) in one statement that also checks the reach; None for anything else, which
    the caller takes through its access check and append_events (they say what is wrong).
    With charge, the statement charges the request's events first (charge.done then) and
    stores nothing past a limit (QuotaExceeded)."""
    if not isinstance(events, list) or not 0 < len(events) <= _INLINE_INSERT_MAX:
        return None
    if any(not isinstance(e, dict) or e.get("kind") in _MESSAGE_KINDS for e in events):
        return None
    try:
        checked = check_events(events)
    except InvalidEvents:
        return None
    return _append_in_one_statement(run, checked, start=True, within=within, charge=charge)


def _refuse_seqs_past_the_column(events: Sequence[CheckedEvent]) -> None:
    """Refuse (InvalidInput naming it) the first event whose seq the columns cannot hold."""
    for index, event in enumerate(events):
        if event.seq > MAX_SEQ:
            where = f"events[{index}].seq"
            raise InvalidInput(
                f"{where}: a seq is at most {MAX_SEQ}, not {event.seq}",
                field=where,
                maxSeq=MAX_SEQ,
            )


# Kinds that may ask for a message id, which the full path checks is free.
_MESSAGE_KINDS = ("message", "message-start")

# The common append in one statement, autocommitted: lock the run, insert the events, update
# the run and notify, when the events follow the run's last seq and the run is open. One round
# trip instead of four (BEGIN, lock, store, COMMIT); anything else (a gap, a re-send, a closed
# run or locked thread, a requested message id) returns no row and takes the full path below,
# which says what is wrong.
_FAST_APPEND = """
    WITH locked AS (
        SELECT r.id, r.thread_id, r.status FROM transcripts_run r
        JOIN transcripts_thread t ON t.id = r.thread_id
        WHERE r.id = %(id)s AND r.last_seq = %(after)s AND r.status IN ('queued', 'streaming')
            AND NOT t.locked
            AND (%(project)s::bigint IS NULL OR t.project_id = %(project)s
                AND CASE WHEN t.hidden THEN %(hidden)s ELSE %(visible)s END)
        FOR UPDATE OF r
    ), inserted AS (
        INSERT INTO transcripts_event (thread_id, run_id, seq, kind, data, at)
        SELECT locked.thread_id, locked.id, u.seq, u.kind, u.data::jsonb, u.at
        FROM locked, unnest(%(seqs)s::integer[], %(kinds)s::text[], %(datas)s::text[],
            %(ats)s::timestamptz[]) AS u(seq, kind, data, at)
    ), updated AS (
        UPDATE transcripts_run r SET last_seq = %(last_seq)s,
            first_event_at = coalesce(r.first_event_at, %(now)s),
            status = CASE WHEN %(start)s THEN 'streaming' ELSE r.status END,
            started_at = CASE WHEN %(start)s AND r.status = 'queued'
                THEN coalesce(r.started_at, %(now)s) ELSE r.started_at END
        FROM locked WHERE r.id = locked.id
        RETURNING r.status
    )
    SELECT pg_notify(%(channel)s, {payload}) FROM updated
""".format(payload=change_payload_sql("%(last_seq)s::integer", "updated.status"))


@cache
def _fast_append_charging() -> str:
    """_FAST_APPEND that also charges the request's events to its token and project
    (`quotas.charge_cte`), first: it stores nothing past a limit. Its rows are the charge's,
    each with whether the events were stored."""
    cte, _ = charge_cte(EventCharge(0, 0, 0, (None, None)))
    head, _, rest = _FAST_APPEND.partition("WITH locked AS (")
    lock, _, rest = rest.partition("FOR UPDATE OF r")
    rest, _, notify = rest.rpartition("SELECT pg_notify(")
    return (
        f"{head}WITH {cte}, locked AS ({lock}AND (SELECT ok FROM within_limits)\n"
        f"        FOR UPDATE OF r{rest}, notified AS (SELECT pg_notify({notify})\n"
        "    SELECT c.scope, c.requests, c.events, c.seconds_left,"
        " (SELECT count(*) FROM notified) FROM charged c\n"
    )


def _append_in_one_statement(
    run: Run | str,
    events: Sequence[CheckedEvent],
    *,
    start: bool,
    within: Reach | None,
    charge: EventCharge | None = None,
) -> AppendResult | None:
    """The append done in one autocommitted statement, or None when it takes the full path.

    Only outside a transaction (inside one, a failure could not be told from a refusal
    without a savepoint), for up to _INLINE_INSERT_MAX events that ask for no message id;
    with within, only to a thread within that reach.
    """
    if connection.in_atomic_block or not events or len(events) > _INLINE_INSERT_MAX:
        return None
    if any(e.kind in _MESSAGE_KINDS for e in events) or events[-1].seq > MAX_SEQ:
        return None
    run_id = run.id if isinstance(run, Run) else run
    if not is_ulid(run_id):
        return None
    now = timezone.now()
    last_seq = events[-1].seq
    sql, charging = _FAST_APPEND, dict[str, str | int]()
    if charge is not None and not charge.done and charge.project_limits is not None:
        sql, charging = _fast_append_charging(), charge_cte(charge)[1]
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            {
                **charging,
                "id": to_uuid(run_id),
                "after": events[0].seq - 1,
                "seqs": [e.seq for e in events],
                "kinds": [e.kind for e in events],
                "datas": [e.data_json for e in events],
                "ats": [e.at or now for e in events],
                "last_seq": last_seq,
                "now": now,
                "start": start,
                "channel": run_channel(str(run_id).upper()),
                "project": within.project_id if within is not None else None,
                "visible": within is not None and within.visible,
                "hidden": within is not None and within.hidden,
            },
        )
        rows = cursor.fetchall()
    if charging:
        assert charge is not None
        check_charged(charge, [row[:4] for row in rows])  # QuotaExceeded past a limit
        stored = bool(rows and rows[0][4])
    else:
        stored = bool(rows)
    return AppendResult(last_seq, len(events), 0) if stored else None


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


def _lock_for_append(run: Run | str, within: Reach | None = None) -> tuple[Run, bool]:
    """Lock the run row and read what an append needs (and whether its thread is locked);
    with within, OutOfReach unless the run's thread is in that reach.

    Appends are the hot path: one hand-written query instead of the ORM's.
    """
    if within is not None and not (isinstance(run, Run) or is_ulid(run)):
        raise OutOfReach(f"run {run} does not exist", runId=run)
    run_id = run.id if isinstance(run, Run) else require_ulid(run, "runId")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.id, r.thread_id, r.fork_from_id, r.status, r.last_seq, r.started_at,"
            " r.first_event_at, r.snapshot_seq, t.project_id, t.hidden, t.locked"
            " FROM transcripts_run r JOIN transcripts_thread t ON t.id = r.thread_id"
            " WHERE r.id = %s FOR UPDATE OF r",
            [to_uuid(run_id)],
        )
        row = cursor.fetchone()
    if row is None:
        refusal = NotFound if within is None else OutOfReach
        raise refusal(f"run {run_id} does not exist", runId=run_id)
    *fields, project_id, hidden, locked = row
    if within is not None and not (
        project_id == within.project_id and (within.hidden if hidden else within.visible)
    ):
        raise OutOfReach(f"run {run_id} does not exist", runId=run_id)
    ids = [None if v is None else ulid_of(v) for v in fields[:3]]
    read = dict(zip(_APPEND_FIELDS, ids + list(fields[3:]), strict=True))
    # from_db wants the values in field order; the fields not read here (the snapshot above
    # all) load on first access.
    names = [f.attname for f in Run._meta.concrete_fields if f.attname in read]
    run = Run.from_db(connection.alias, names, [read[name] for name in names])
    return run, bool(locked)


def _stored_likeness(
    run_id: str, events: Sequence[CheckedEvent]
) -> dict[int, tuple[bool, datetime | None]]:
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


def _same_event(stored: tuple[bool, datetime | None], new: CheckedEvent) -> bool:
    same, at = stored
    return bool(same) and (new.at is None or new.at == at)


def _refuse_taken_message_ids(events: Sequence[CheckedEvent], *, thread_id: str) -> None:
    """Refuse events that ask for the id of a message already in the database.

    The projector keeps a requested id, so such a run could never be committed; saying so
    at append time leaves the run usable. Ids taken in this thread are listed; an id taken
    anywhere else (another thread or project, seen or not) is refused without saying which.
    """
    requested = {
        str(event.data.get(key)).upper()
        for event in events
        for kind, key in (("message", "id"), ("message-start", "messageId"))
        if event.kind == kind and is_ulid(event.data.get(key))
    }
    if not requested:
        return
    taken = list(Message.objects.filter(pk__in=requested).values_list("pk", "thread_id"))
    if any(str(thread) != thread_id for _, thread in taken):
        raise Conflict(
            "a requested message id cannot be used: give each message a new id or none",
            field="events",
        )
    if taken:
        raise Conflict(
            "message ids are already used by other messages: give each message a new id or none",
            messageIds=sorted(str(pk) for pk, _ in taken),
        )


def _copy_events(run: Run, events: Sequence[CheckedEvent], now: datetime) -> None:
    lines = event_lines(
        thread_hex=to_uuid(run.thread_id).hex,
        run_hex=to_uuid(run.id).hex,
        events=events,
        now_text=now.isoformat(),
    )
    copy_lines(connection.connection, "transcripts_event", EVENT_COLUMNS, lines)


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
                "payload": change_payload(run),
            },
        )
