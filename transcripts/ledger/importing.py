"""The ledger's bulk write path for imports: a whole message tree in one transaction.

Part of the ledger (the one way to write): it writes the same rows commit_run would, runs with
`message` events that project to exactly the stored messages, so every invariant holds and
every imported message replays from the event log. What to write is planned in
`import_plan.py`; this module writes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from transcripts.events import CheckedEvent
from transcripts.fields import to_uuid
from transcripts.formats.document import TreeThread
from transcripts.ids import derived_ulid, is_ulid, new_ulid
from transcripts.ledger.bulk_copy import UuidCache, copy_event_rows, copy_message_rows
from transcripts.ledger.checks import check_object, check_storable
from transcripts.ledger.import_plan import (
    active_keys,
    chains,
    check_runs,
    checked_events,
    depths,
    empty_run_status,
    kept_events,
    message_events,
    messages_by_key,
    object_or_empty,
    projected_message,
    statuses,
)
from transcripts.ledger.threads import MAX_TITLE
from transcripts.models import Project, Run, RunOrigin, RunStatus, Thread
from transcripts.selectors.ulids import ulid_of
from transcripts.times import parse_iso, parse_iso_utc


def import_tree(tree: TreeThread, *, project: Project, keep_ids: bool = True) -> Thread:
    """Write a whole thread (every branch) through the ledger, in one transaction.

    Ids that are ULIDs not used yet are kept (so a canonical export re-imports as itself);
    other ids get fresh ULIDs, the original kept in metadata.sourceMessageId. A run exported
    with its events keeps them when its ids are kept and they project to its messages;
    otherwise its messages are recorded as `message` events.
    """
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
    taken = _taken(tree, by_key, sources) if keep_ids else Taken()
    ids: dict[str, str] = {}
    times: dict[str, datetime] = {}
    for position, (key, message) in enumerate(by_key.items()):
        moment = parse_iso_utc(message.get("createdAt")) or now
        times[key] = moment
        if keep_ids and is_ulid(key) and key not in taken.messages:
            ids[key] = key
        else:
            ids[key] = derived_ulid(int(moment.timestamp() * 1000), position, new_ulid(), key)
    title = (tree.title or "")[:MAX_TITLE]
    check_storable(title, "title")
    # The thread row is written whole, head included (the foreign key is checked at commit):
    # one INSERT instead of an insert, an update and a read back.
    thread = Thread(
        project=project,
        title=title,
        metadata=check_object(tree.metadata, "metadata"),
        agents=check_object(tree.agents, "agents"),
        created_at=parse_iso_utc(tree.created_at) or now,
        updated_at=parse_iso_utc(tree.updated_at) or now,
    )
    if keep_ids and tree.id is not None and is_ulid(tree.id) and not taken.thread:
        thread.id = tree.id
    with transaction.atomic():
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
            fork_key = source.get("forkFromMessageId")
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
        # Rows as tuples, straight to COPY: a Message instance per row cost more than the rest
        # of the write (bench/bench_import.py); the columns are those of copy_messages.
        message_rows: list[tuple[Any, ...]] = []
        head: tuple[int, str] | None = None
        uuid_of = UuidCache()
        event_rows: list[tuple[Any, ...]] = []
        thread_uuid = uuid_of(thread.id)

        def add_events(run: Run, stored: list[CheckedEvent]) -> None:
            run.last_seq = stored[-1].seq if stored else 0
            run_uuid = to_uuid(run.id)
            event_rows.extend(
                (thread_uuid, run_uuid, e.seq, e.kind, e.data_json, e.at or now) for e in stored
            )

        for chain, run in zip(planned, runs, strict=True):
            recorded = message_events([(by_key[k], ids[k], times[k]) for k in chain.keys])
            kept = kept_events(chain, run.id, run.fork_from_id, ids)
            add_events(run, recorded if kept is None else kept[0])
            ranges = [(n, n) for n in range(1, len(recorded) + 1)] if kept is None else kept[1]
            parent = run.fork_from_id
            tool_names: dict[str, str] = {}
            run_uuid = uuid_of(run.id)
            for position, (key, event) in enumerate(zip(chain.keys, recorded, strict=True)):
                projected = projected_message(event.data, parent, tool_names)
                message_id = projected["id"]
                is_active = key in active
                if is_active and (head is None or depth[key] > head[0]):
                    head = (depth[key], message_id)
                first_seq, last_seq = ranges[position]
                message_rows.append(
                    (
                        uuid_of(message_id),
                        uuid_of(parent) if parent else None,
                        run_uuid,
                        depth[key],
                        position,
                        projected["role"],
                        json.dumps(projected["parts"], ensure_ascii=False),
                        json.dumps(projected["metadata"], ensure_ascii=False),
                        parse_iso(projected.get("createdAt")) or run.created_at,
                        is_active,
                        thread_uuid,
                        first_seq,
                        last_seq,
                        "",
                    )
                )
                parent = message_id
        for source, run in zip(empty, extra_runs, strict=True):
            events_in = source.get("events")
            if keep_ids and run.id == source.get("id") and isinstance(events_in, list):
                add_events(run, checked_events(events_in, "runs[].events"))
        if head is not None:
            thread.head_id = head[1]
        thread.save(force_insert=True)
        Run.objects.bulk_create(runs + extra_runs, batch_size=500)
        copy_event_rows(event_rows)
        copy_message_rows(message_rows)
    return thread


@dataclass(frozen=True)
class Taken:
    """The ids an import would keep that are in use already."""

    messages: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()
    thread: bool = False


def _taken(
    tree: TreeThread, by_key: dict[str, dict[str, Any]], sources: list[dict[str, Any]]
) -> Taken:
    """Which of the tree's own ids are taken, in one round trip."""
    messages = [to_uuid(k) for k in by_key if is_ulid(k)]
    runs = [to_uuid(s["id"]) for s in sources if is_ulid(s.get("id"))]
    thread = [to_uuid(tree.id)] if is_ulid(tree.id) else []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'message', id FROM transcripts_message WHERE id = ANY(%s)"
            " UNION ALL SELECT 'run', id FROM transcripts_run WHERE id = ANY(%s)"
            " UNION ALL SELECT 'thread', id FROM transcripts_thread WHERE id = ANY(%s)",
            [messages, runs, thread],
        )
        found: dict[str, set[str]] = {"message": set(), "run": set(), "thread": set()}
        for kind, value in cursor.fetchall():
            found[kind].add(ulid_of(value))
    return Taken(frozenset(found["message"]), frozenset(found["run"]), bool(found["thread"]))


def _run_row(
    source: dict[str, Any],
    *,
    thread: Thread,
    run_id: str,
    fork_from: str | None,
    status: str,
    superseded_by: str | None,
    first: datetime,
    last: datetime,
    last_seq: int,
    error: dict[str, Any] | None = None,
) -> Run:
    finished = status != RunStatus.QUEUED and status != RunStatus.STREAMING
    return Run(
        id=run_id,
        thread=thread,
        fork_from_id=fork_from,
        status=status,
        generator=source["generator"] if isinstance(source.get("generator"), str) else "import",
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


def _run_ids(sources: list[dict[str, Any]], keep_ids: bool, taken: frozenset[str]) -> list[str]:
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
