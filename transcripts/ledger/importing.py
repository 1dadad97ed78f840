"""The ledger's bulk write path for imports: a whole message tree in one transaction.

Part of the ledger (the one way to write): it writes the same rows commit_run would, runs with
`message` events that project to exactly the stored messages, so every invariant holds and
every imported message replays from the event log. What to write is planned in
`import_plan.py`; this module writes it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from transcripts.events import CheckedEvent
from transcripts.fields import to_uuid
from transcripts.formats.document import TreeThread
from transcripts.ids import derived_ulid, is_ulid, new_ulid
from transcripts.ledger.bulk_copy import UuidCache, copy_event_rows, copy_message_rows
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
from transcripts.ledger.threads import MAX_TITLE, create_thread
from transcripts.models import Message, Project, Run, RunOrigin, RunStatus, Thread
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
    taken: set[str] = set()
    if keep_ids:
        candidates = [k for k in by_key if is_ulid(k)]
        taken = set(Message.objects.filter(pk__in=candidates).values_list("pk", flat=True))
    ids: dict[str, str] = {}
    times: dict[str, datetime] = {}
    for position, (key, message) in enumerate(by_key.items()):
        moment = parse_iso_utc(message.get("createdAt")) or now
        times[key] = moment
        if keep_ids and is_ulid(key) and key not in taken:
            ids[key] = key
        else:
            ids[key] = derived_ulid(int(moment.timestamp() * 1000), position, new_ulid(), key)
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
    thread_id = tree.id if keep_ids and is_ulid(tree.id) else None
    if thread_id and Thread.objects.filter(pk=thread_id).exists():
        thread_id = None
    with transaction.atomic():
        thread, _ = create_thread(
            project=project,
            title=(tree.title or "")[:MAX_TITLE],
            metadata=tree.metadata,
            agents=tree.agents,
            thread_id=thread_id,
        )
        created = parse_iso_utc(tree.created_at)
        if created is not None:
            thread.created_at = created
        thread.updated_at = parse_iso_utc(tree.updated_at) or now
        run_ids = _run_ids([c.source for c in planned] + empty, keep_ids)
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
        Run.objects.bulk_create(runs + extra_runs, batch_size=500)
        copy_event_rows(event_rows)
        copy_message_rows(message_rows)
        Thread.objects.filter(pk=thread.pk).update(
            head_id=head[1] if head else None,
            created_at=thread.created_at,
            updated_at=thread.updated_at,
        )
    thread.refresh_from_db()
    return thread


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


def _run_ids(sources: list[dict[str, Any]], keep_ids: bool) -> list[str]:
    """An id for each run: its own when that is a ULID not used yet, else a fresh one."""
    wanted = [s.get("id") for s in sources]
    keep = {w for w in wanted if keep_ids and is_ulid(w)}
    taken = set(Run.objects.filter(pk__in=keep).values_list("pk", flat=True)) if keep else set()
    seen: set[str] = set()
    result = []
    for value in wanted:
        if isinstance(value, str) and value in keep and value not in taken and value not in seen:
            result.append(value)
        else:
            result.append(new_ulid())
        seen.add(result[-1])
    return result
