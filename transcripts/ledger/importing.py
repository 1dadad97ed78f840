"""The ledger's bulk write path for imports: whole message trees, many per COPY.

Part of the ledger (the one way to write): it writes the same rows commit_run would, runs with
`message` events that project to exactly the stored messages, so every invariant holds and
every imported message replays from the event log. What to write is planned in
`import_plan.py`; this module writes it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import psycopg
from django.db import connection
from django.utils import timezone

from transcripts.events import CheckedEvent
from transcripts.formats.document import TreeThread
from transcripts.ids import is_ulid, new_ulid, to_uuid, ulid_of
from transcripts.jsonvalue import JsonObject, as_str
from transcripts.ledger.bulk_copy import (
    EVENT_COLUMNS,
    MESSAGE_COLUMNS,
    NULL,
    copy_field,
    copy_json_field,
    copy_lines,
    event_lines,
)
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.import_plan import (
    active_keys,
    chains,
    check_runs,
    checked_events,
    depths,
    empty_run_status,
    kept_events,
    messages_by_key,
    object_or_empty,
    recorded_messages,
    statuses,
)
from transcripts.ledger.organise import add_metadata_tags
from transcripts.ledger.scores import ImportedJudgement, JudgementImported, import_judgement
from transcripts.ledger.storable import check_object, check_storable
from transcripts.ledger.threads import MAX_TITLE
from transcripts.models import Project, Run, RunOrigin, RunStatus, Thread
from transcripts.times import parse_iso_utc

# Rows buffered before they go to the database: big enough that a COPY and an INSERT carry
# many threads, small enough that memory stays flat whatever the size of the export.
BATCH_ROWS = 20_000
_MAX_MS = (1 << 48) - 1
# Crockford's base32 two characters at a time: a ULID's 130 bits (two zero bits, then its
# 128) are 13 lookups of 10 bits, where the ulid package loops over 26 characters.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]
_SHIFTS = range(120, -1, -10)


def ulid_text(raw: bytes) -> str:
    """The ULID string of 16 bytes, as ULID.from_bytes(raw) spells it."""
    value = int.from_bytes(raw, "big")
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _SHIFTS])


class TreeWriter:
    """Writes whole threads (every branch) through the ledger, many per batch of rows.

    Use it inside one transaction and call `flush` before it ends: `add` checks and plans a
    thread and raises InvalidInput for anything it would refuse, so a caller that rolls back
    on that error writes nothing of an invalid import.
    """

    def __init__(self, *, project: Project, keep_ids: bool = True) -> None:
        self.project = project
        self.keep_ids = keep_ids
        self._threads: list[Thread] = []
        self._runs: list[Run] = []
        self._events: list[str] = []
        self._messages: list[str] = []
        # Ids kept by the threads not flushed yet: the database cannot tell they are taken.
        self._pending = _Kept()
        # The COPY of the last batch, running while the next one is planned.
        self._copying: threading.Thread | None = None
        self._copy_failed: BaseException | None = None
        # Threads written whose counters are not counted yet (counted once their COPY ended).
        self._uncounted: list[str] = []
        # The scores and feedback of the buffered threads, and what was written of them.
        self._judged: list[ImportedJudgement] = []
        self.judgement = JudgementImported()

    def __enter__(self) -> TreeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        # The transaction must not end under a COPY still running; a COPY's own error is
        # raised here unless another is on its way already.
        self._join(raise_failure=exc[0] is None)

    def add(self, tree: TreeThread) -> Thread:
        """Check and plan one thread's rows, writing a batch when enough are buffered.

        Ids that are ULIDs not used yet are kept (so a canonical export re-imports as itself);
        other ids get fresh ULIDs, the original kept in metadata.sourceMessageId. A run
        exported with its events keeps them when its ids are kept and they project to its
        messages; otherwise its messages are recorded as `message` events.
        """
        thread = self._plan(tree)
        self._threads.append(thread)
        if len(self._events) + len(self._messages) >= BATCH_ROWS:
            self.flush(wait=False)
        return thread

    def flush(self, *, wait: bool = True) -> None:
        """Write the buffered threads, runs, events and messages.

        The events and messages go by COPY on a thread of their own: PostgreSQL stores one
        batch while this one plans the next. wait=False returns while that COPY runs.
        """
        self._join()
        if self._threads:
            # Foreign keys are checked at commit: a thread may name its head before it exists.
            Thread.objects.bulk_create(self._threads, batch_size=500)
            add_metadata_tags(self.project.pk, *(thread.metadata for thread in self._threads))
            Run.objects.bulk_create(self._runs, batch_size=500)
            self._write_judgement()
            pg = connection.connection
            assert pg is not None  # bulk_create connected
            self._copying = threading.Thread(
                target=self._copy, args=(pg, self._events, self._messages), daemon=True
            )
            self._copying.start()
            self._uncounted.extend(thread.id for thread in self._threads)
            self._threads, self._runs, self._events, self._messages = [], [], [], []
            # The database tells these ids are taken once the COPY is joined, which _taken
            # does before it asks.
            self._pending = _Kept()
        if wait:
            self._join()
            refresh_counters(self._uncounted)
            self._uncounted = []

    def _write_judgement(self) -> None:
        """Store the buffered threads' scores and feedback (their rows name ids only)."""
        written = import_judgement(self.project, self._judged)
        self.judgement.scores += written.scores
        self.judgement.feedback += written.feedback
        self.judgement.skipped += written.skipped
        self._judged = []

    def _copy(
        self, pg: psycopg.Connection[tuple[object, ...]], events: list[str], messages: list[str]
    ) -> None:
        try:
            copy_lines(pg, "transcripts_event", EVENT_COLUMNS, events)
            copy_lines(pg, "transcripts_message", MESSAGE_COLUMNS, messages)
        except BaseException as exc:  # raised in the importing thread by _join
            self._copy_failed = exc

    def _join(self, *, raise_failure: bool = True) -> None:
        """Wait for the COPY in flight, raising its error."""
        if self._copying is not None:
            self._copying.join()
            self._copying = None
        failed, self._copy_failed = self._copy_failed, None
        if failed is not None and raise_failure:
            raise failed

    def _plan(self, tree: TreeThread) -> Thread:
        keep_ids = self.keep_ids
        by_key = messages_by_key(tree)
        check_runs(tree)
        active = active_keys(tree, by_key)
        now = timezone.now()
        planned = chains(tree, by_key)
        status, superseded_by = statuses(planned, active)
        in_chains = {id(c.source) for c in planned}
        # Runs without messages (failed, cancelled, in flight when exported) are kept too.
        empty = [
            r
            for r in tree.runs
            if isinstance(r, dict)
            and id(r) not in in_chains
            and not r.get("messageIds")
            and (r.get("forkFromMessageId") is None or r.get("forkFromMessageId") in by_key)
        ]
        sources = [c.source for c in planned] + empty
        taken = self._taken(tree, by_key, sources) if keep_ids else Taken()
        ids: dict[str, str] = {}
        hex_of: dict[str, str] = {}  # each message id's 128 bits, as COPY writes a uuid
        times: dict[str, datetime] = {}
        randomness = os.urandom(8 * len(by_key))
        for position, (key, message) in enumerate(by_key.items()):
            moment = parse_iso_utc(message.get("createdAt")) or now
            times[key] = moment
            if keep_ids and is_ulid(key) and key not in taken.messages:
                ids[key] = key
                hex_of[key] = to_uuid(key).hex
            else:
                # A ULID of the message's time, its position (ids made in the same
                # millisecond keep their order) and random bits.
                raw = (
                    max(0, min(int(moment.timestamp() * 1000), _MAX_MS)).to_bytes(6, "big")
                    + (position % 65536).to_bytes(2, "big")
                    + randomness[8 * position : 8 * position + 8]
                )
                ids[key] = ulid_text(raw)
                hex_of[ids[key]] = raw.hex()
        title = (tree.title or "")[:MAX_TITLE]
        check_storable(title, "title")
        thread = Thread(
            project=self.project,
            title=title,
            metadata=check_object(tree.metadata, "metadata"),
            agents=check_object(tree.agents, "agents"),
            created_at=parse_iso_utc(tree.created_at) or now,
            updated_at=parse_iso_utc(tree.updated_at) or now,
        )
        if keep_ids and tree.id is not None and is_ulid(tree.id) and not taken.thread:
            thread.id = tree.id
        run_ids = _run_ids(sources, keep_ids, taken.runs)
        runs: list[Run] = []
        for index, chain in enumerate(planned):
            chain.run_id = run_ids[index]
            runs.append(
                _run_row(
                    chain.source,
                    thread=thread,
                    run_id=chain.run_id,
                    fork_from=ids[chain.fork_key] if chain.fork_key else None,
                    status=status[index],
                    superseded_by=(
                        run_ids[superseded_by[index] or 0]
                        if superseded_by.get(index) is not None
                        else None
                    ),
                    first=times[chain.keys[0]],
                    last=times[chain.keys[-1]],
                    last_seq=len(chain.keys),
                )
            )
        winners = {
            chain.fork_key: run.id
            for chain, run in zip(planned, runs, strict=True)
            if run.status == RunStatus.COMMITTED
        }
        extra_runs: list[Run] = []
        for offset, source in enumerate(empty):
            # None or a message of the tree: `empty` keeps only those.
            fork_key = as_str(source.get("forkFromMessageId"))
            state, error, winner = empty_run_status(source, winners.get(fork_key))
            if state == RunStatus.COMMITTED:
                winners[fork_key] = run_ids[len(planned) + offset]
            moment = parse_iso_utc(source.get("createdAt")) or now
            extra_runs.append(
                _run_row(
                    source,
                    thread=thread,
                    run_id=run_ids[len(planned) + offset],
                    fork_from=ids[fork_key] if fork_key else None,
                    status=state,
                    superseded_by=winner,
                    first=moment,
                    last=moment,
                    last_seq=0,
                    error=error,
                )
            )
        depth = depths(by_key)
        # Rows as lines of COPY's text format: a Message instance per row cost more than the
        # rest of the write, and psycopg's per-value adaptation most of what was left
        # (bench/bench_import.py); the columns are MESSAGE_COLUMNS and EVENT_COLUMNS.
        message_lines: list[str] = []
        event_rows: list[str] = []
        head: tuple[int, str] | None = None
        thread_hex = to_uuid(thread.id).hex
        now_text = now.isoformat()

        def add_events(run: Run, stored: list[CheckedEvent]) -> None:
            run.last_seq = stored[-1].seq if stored else 0
            event_rows.extend(
                event_lines(
                    thread_hex=thread_hex,
                    run_hex=to_uuid(run.id).hex,
                    events=stored,
                    now_text=now_text,
                )
            )

        for chain, run in zip(planned, runs, strict=True):
            recorded = recorded_messages([(by_key[k], ids[k], times[k]) for k in chain.keys])
            kept = kept_events(chain, run.id, run.fork_from_id, ids)
            add_events(run, [r.event for r in recorded] if kept is None else kept[0])
            ranges = [(n, n) for n in range(1, len(recorded) + 1)] if kept is None else kept[1]
            parent = run.fork_from_id
            run_hex = to_uuid(run.id).hex
            for position, (key, row) in enumerate(zip(chain.keys, recorded, strict=True)):
                message_id = ids[key]
                is_active = key in active
                if is_active and (head is None or depth[key] > head[0]):
                    head = (depth[key], message_id)
                first_seq, last_seq = ranges[position]
                message_lines.append(
                    f"{hex_of[message_id]}\t{hex_of[parent] if parent else NULL}\t{run_hex}\t"
                    f"{depth[key]}\t{position}\t{copy_field(row.role)}\t"
                    f"{copy_json_field(row.parts_json)}\t"
                    f"{copy_json_field(row.metadata_json)}\t"
                    f"{row.created_at}\t{'t' if is_active else 'f'}\t{thread_hex}\t"
                    f"{first_seq}\t{last_seq}\t\n"
                )
                parent = message_id
        for source, run in zip(empty, extra_runs, strict=True):
            events_in = source.get("events")
            if keep_ids and run.id == source.get("id") and isinstance(events_in, list):
                add_events(run, checked_events(events_in, "runs[].events"))
        if head is not None:
            thread.head_id = head[1]
        if tree.scores or tree.feedback:
            stored_runs = {
                source_id: run_id
                for source, run_id in zip(sources, run_ids, strict=True)
                if isinstance(source_id := source.get("id"), str)
            }
            self._judged.append(
                ImportedJudgement(thread.id, tree.scores, tree.feedback, ids, stored_runs)
            )
        self._runs += runs + extra_runs
        self._events += event_rows
        self._messages += message_lines
        if keep_ids:
            self._pending.add(thread.id, (r.id for r in runs + extra_runs), ids.values())
        return thread

    def _taken(
        self, tree: TreeThread, by_key: dict[str, JsonObject], sources: list[JsonObject]
    ) -> Taken:
        """Which of the tree's own ids are taken: by a thread of this batch, or stored."""
        messages = [k for k in by_key if is_ulid(k)]
        runs = [run for s in sources if isinstance(run := s.get("id"), str) and is_ulid(run)]
        thread = [tree.id] if tree.id is not None and is_ulid(tree.id) else []
        if not (messages or runs or thread):
            return Taken()
        self._join()
        stored = _stored(messages, runs, thread)
        pending = self._pending
        return Taken(
            stored.messages | pending.messages.intersection(messages),
            stored.runs | pending.runs.intersection(runs),
            stored.thread or bool(pending.threads.intersection(thread)),
        )


@dataclass(frozen=True)
class Taken:
    """The ids an import would keep that are in use already."""

    messages: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    thread: bool = False


def _stored(messages: list[str], runs: list[str], thread: list[str]) -> Taken:
    """Which of these message, run and thread ids are stored already, in one round trip."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'message', id FROM transcripts_message WHERE id = ANY(%s)"
            " UNION ALL SELECT 'run', id FROM transcripts_run WHERE id = ANY(%s)"
            " UNION ALL SELECT 'thread', id FROM transcripts_thread WHERE id = ANY(%s)",
            [
                [to_uuid(k) for k in messages],
                [to_uuid(k) for k in runs],
                [to_uuid(k) for k in thread],
            ],
        )
        found: dict[str, set[str]] = {"message": set(), "run": set(), "thread": set()}
        for kind, value in cursor.fetchall():
            found[kind].add(ulid_of(value))
    return Taken(frozenset(found["message"]), frozenset(found["run"]), bool(found["thread"]))


class _Kept:
    """Ids that threads planned but not yet written keep."""

    def __init__(self) -> None:
        self.threads: set[str] = set()
        self.runs: set[str] = set()
        self.messages: set[str] = set()

    def add(self, thread: str, runs: Iterable[str], messages: Iterable[str]) -> None:
        self.threads.add(thread)
        self.runs.update(runs)
        self.messages.update(messages)


def _run_row(
    source: JsonObject,
    *,
    thread: Thread,
    run_id: str,
    fork_from: str | None,
    status: str,
    superseded_by: str | None,
    first: datetime,
    last: datetime,
    last_seq: int,
    error: JsonObject | None = None,
) -> Run:
    finished = status != RunStatus.QUEUED and status != RunStatus.STREAMING
    return Run(
        id=run_id,
        thread=thread,
        fork_from_id=fork_from,
        status=status,
        generator=named if isinstance(named := source.get("generator"), str) else "import",
        origin=RunOrigin.IMPORT,
        model=str(source.get("model") or ""),
        parameters=object_or_empty(source.get("parameters")),
        metadata=object_or_empty(source.get("metadata")),
        usage=object_or_empty(source.get("usage")),
        error=error
        if error is not None
        else (source.get("error") if isinstance(source.get("error"), dict) else None),
        created_at=parse_iso_utc(source.get("createdAt")) or first,
        started_at=first,
        first_event_at=first,
        finished_at=parse_iso_utc(source.get("finishedAt")) or (last if finished else None),
        last_seq=last_seq,
        # Foreign keys are checked at commit, so a run may point at a later one.
        superseded_by_id=superseded_by,
    )


def _run_ids(sources: list[JsonObject], keep_ids: bool, taken: frozenset[str]) -> list[str]:
    """An id for each run: its own when that is a ULID not used yet, else a fresh one."""
    wanted = [s.get("id") for s in sources]
    keep = {w for w in wanted if keep_ids and is_ulid(w)}
    seen: set[str] = set()
    result = []
    for value in wanted:
        if isinstance(value, str) and value in keep and value not in taken and value not in seen:
            result.append(value)
        else:
            result.append(new_ulid())
        seen.add(result[-1])
    return result
