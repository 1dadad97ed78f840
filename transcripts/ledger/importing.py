"""The ledger's bulk write path for imports: a whole message tree in one transaction.

Part of the ledger (the one way to write): it writes the same rows commit_run would, runs with
`message` events that project to exactly the stored messages, so every invariant holds and
every imported message replays from the event log.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from transcripts import ledger
from transcripts.errors import InvalidEvents, InvalidInput
from transcripts.events import CheckedEvent, check_events, to_storable_json
from transcripts.fields import to_uuid
from transcripts.formats.document import TreeThread
from transcripts.ids import derived_ulid, is_ulid, new_ulid
from transcripts.models import Message, Run, RunStatus, Thread
from transcripts.projector import SCHEMA_VERSION, project


@dataclass
class _Chain:
    """The messages one imported run holds, in order."""

    run_id: str
    fork_key: str | None
    keys: list[str]
    source: dict[str, Any]


def _parse_time(value: Any) -> datetime | None:
    """An aware UTC datetime, or None for text that is no ISO time PostgreSQL can store."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
        # In UTC: PostgreSQL refuses offsets beyond ±15:59 that Python accepts.
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _check_tree(tree: TreeThread) -> dict[str, dict[str, Any]]:
    by_key: dict[str, dict[str, Any]] = {}
    problems: list[dict[str, str]] = []
    for index, message in enumerate(tree.messages):
        key = message.get("id")
        parent = message.get("parentMessageId")
        where = f"messages[{index}]"
        if not isinstance(key, str) or not key:
            problems.append({"path": f"{where}.id", "message": "a message needs an id"})
            continue
        if key in by_key:
            problems.append({"path": f"{where}.id", "message": f"duplicate message id {key!r}"})
        if parent is not None and parent not in by_key:
            problems.append(
                {
                    "path": f"{where}.parentMessageId",
                    "message": f"parent {parent!r} is not an earlier message of the thread",
                }
            )
        by_key[key] = message
    if tree.active_leaf is not None and tree.active_leaf not in by_key:
        problems.append({"path": "activeLeafId", "message": "the active leaf is not a message"})
    if problems:
        raise InvalidInput(problems[0]["message"], problems=problems)
    return by_key


def _chains(tree: TreeThread, by_key: Mapping[str, dict[str, Any]]) -> list[_Chain]:
    """Group messages into runs: the exported runs when given, else maximal linear chains."""
    listed = [r for r in tree.runs if isinstance(r, dict) and r.get("messageIds")]
    claimed: set[str] = set()
    chains: list[_Chain] = []
    for run in listed:
        keys = [k for k in run["messageIds"] if k in by_key and k not in claimed]
        if not keys or any(
            by_key[keys[i]].get("parentMessageId") != keys[i - 1] for i in range(1, len(keys))
        ):
            continue
        claimed.update(keys)
        chains.append(_Chain("", by_key[keys[0]].get("parentMessageId"), keys, run))
    children: dict[str | None, list[str]] = defaultdict(list)
    for key, message in by_key.items():
        if key not in claimed:
            children[message.get("parentMessageId")].append(key)
    for key, message in by_key.items():
        if key in claimed:
            continue
        parent = message.get("parentMessageId")
        # A chain starts at a root, a fork point's child, or the child of a listed run.
        if parent is not None and parent not in claimed and len(children[parent]) == 1:
            continue
        keys = [key]
        while len(children[keys[-1]]) == 1:
            keys.append(children[keys[-1]][0])
        claimed.update(keys)
        chains.append(_Chain("", parent, keys, {}))
    return chains


def _statuses(
    chains: list[_Chain], active: set[str]
) -> tuple[dict[int, str], dict[int, int | None]]:
    """Per chain: status and superseding chain, so each fork point has one committed run."""
    status: dict[int, str] = {}
    superseded_by: dict[int, int | None] = {}
    by_fork: dict[str | None, list[int]] = defaultdict(list)
    for index, chain in enumerate(chains):
        by_fork[chain.fork_key].append(index)
    by_source = {c.source.get("id"): i for i, c in enumerate(chains) if c.source.get("id")}
    for indexes in by_fork.values():
        winners = [i for i in indexes if chains[i].keys[0] in active]
        winner = winners[0] if winners else indexes[-1]
        for index in indexes:
            status[index] = RunStatus.COMMITTED if index == winner else RunStatus.SUPERSEDED
            superseded_by[index] = None if index == winner else winner
            # The exported supersededBy, when it names another run at this fork point.
            named = by_source.get(chains[index].source.get("supersededBy"))
            if index != winner and named is not None and named != index and named in indexes:
                superseded_by[index] = named
    return status, superseded_by


def _active_keys(tree: TreeThread, by_key: Mapping[str, dict[str, Any]]) -> set[str]:
    leaf = tree.active_leaf
    if leaf is None and tree.messages:
        leaf = tree.messages[-1].get("id")
    active: set[str] = set()
    while leaf is not None:
        active.add(leaf)
        leaf = by_key[leaf].get("parentMessageId")
    return active


def check_tree(tree: TreeThread) -> None:
    """Raise InvalidInput for everything import_tree would refuse, without the database.

    A ChatGPT export is checked whole this way before its first thread is written.
    """
    by_key = _check_tree(tree)
    _check_runs(tree)
    now = timezone.now()
    _message_events([(message, new_ulid(), now) for message in by_key.values()])


def _message_events(messages: list[tuple[dict[str, Any], str, datetime]]) -> list[CheckedEvent]:
    """The checked `message` events recording (message, new id, time) triples, seq 1 on."""
    events = [
        {"seq": seq, "kind": "message", "data": _message_event(message, id_, at), "at": _iso(at)}
        for seq, (message, id_, at) in enumerate(messages, start=1)
    ]
    try:
        return check_events(events)
    except InvalidEvents as exc:
        raise InvalidInput(
            f"invalid message in the import: {exc}",
            problems=[p.as_dict() for p in exc.problems],
        ) from None


def import_tree(tree: TreeThread, *, keep_ids: bool = True) -> Thread:
    """Write a whole thread (every branch) through the ledger, in one transaction.

    Ids that are ULIDs not used yet are kept (so a canonical export re-imports as itself);
    other ids get fresh ULIDs, the original kept in metadata.sourceMessageId. A run exported
    with its events keeps them when its ids are kept and they project to its messages;
    otherwise its messages are recorded as `message` events.
    """
    by_key = _check_tree(tree)
    _check_runs(tree)
    active = _active_keys(tree, by_key)
    now = timezone.now()
    taken: set[str] = set()
    if keep_ids:
        candidates = [k for k in by_key if is_ulid(k)]
        taken = set(Message.objects.filter(pk__in=candidates).values_list("pk", flat=True))
    ids: dict[str, str] = {}
    times: dict[str, datetime] = {}
    for position, (key, message) in enumerate(by_key.items()):
        moment = _parse_time(message.get("createdAt")) or now
        times[key] = moment
        if keep_ids and is_ulid(key) and key not in taken:
            ids[key] = key
        else:
            ids[key] = derived_ulid(int(moment.timestamp() * 1000), position, new_ulid(), key)
    chains = _chains(tree, by_key)
    status, superseded_by = _statuses(chains, active)
    in_chains = {id(c.source) for c in chains}
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
        thread, _ = ledger.create_thread(
            title=(tree.title or "")[:500],
            metadata=tree.metadata,
            agents=tree.agents,
            thread_id=thread_id,
        )
        created = _parse_time(tree.created_at)
        if created is not None:
            thread.created_at = created
        thread.updated_at = _parse_time(tree.updated_at) or now
        run_ids = _run_ids([c.source for c in chains] + empty, keep_ids)
        runs: list[Run] = []
        for index, chain in enumerate(chains):
            chain.run_id = run_ids[index]
            first = times[chain.keys[0]]
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
                    first=first,
                    last=times[chain.keys[-1]],
                    last_seq=len(chain.keys),
                )
            )
        winners = {
            chain.fork_key: run.id
            for chain, run in zip(chains, runs, strict=True)
            if run.status == RunStatus.COMMITTED
        }
        extra_runs: list[Run] = []
        for offset, source in enumerate(empty):
            fork_key = source.get("forkFromMessageId")
            state, error, winner = _empty_run_status(source, winners.get(fork_key))
            if state == RunStatus.COMMITTED:
                winners[fork_key] = run_ids[len(chains) + offset]
            moment = _parse_time(source.get("createdAt")) or now
            extra_runs.append(
                _run_row(
                    source,
                    thread=thread,
                    run_id=run_ids[len(chains) + offset],
                    fork_from=ids[fork_key] if fork_key else None,
                    status=state,
                    superseded_by=winner,
                    first=moment,
                    last=moment,
                    last_seq=0,
                    error=error,
                )
            )
        depth = _depths(tree, by_key)
        rows: list[tuple[Any, ...]] = []
        event_rows: list[tuple[Any, ...]] = []
        thread_uuid = to_uuid(thread.id)
        for chain, run in zip(chains, runs, strict=True):
            checked = _message_events([(by_key[k], ids[k], times[k]) for k in chain.keys])
            kept = _kept_events(chain, run, ids)
            stored = checked if kept is None else kept[0]
            ranges = [(n, n) for n in range(1, len(checked) + 1)] if kept is None else kept[1]
            run.last_seq = stored[-1].seq if stored else 0
            run_uuid = to_uuid(run.id)
            event_rows.extend(
                (thread_uuid, run_uuid, e.seq, e.kind, e.data_json, e.at or now) for e in stored
            )
            parent = run.fork_from_id
            for position, (key, event) in enumerate(zip(chain.keys, checked, strict=True)):
                # Exactly what the projector makes of a `message` event (tested in the suite).
                data = event.data
                rows.append(
                    (
                        data["id"],
                        parent,
                        run.id,
                        depth[key],
                        position,
                        data["role"],
                        event.data_json,
                        times[key],
                        key in active,
                        ranges[position],
                    )
                )
                parent = data["id"]
        for source, run in zip(empty, extra_runs, strict=True):
            events_in = source.get("events")
            if keep_ids and run.id == source.get("id") and isinstance(events_in, list):
                stored = _checked(events_in, "runs[].events")
                run.last_seq = stored[-1].seq if stored else 0
                run_uuid = to_uuid(run.id)
                event_rows.extend(
                    (thread_uuid, run_uuid, e.seq, e.kind, e.data_json, e.at or now) for e in stored
                )
        Run.objects.bulk_create(runs + extra_runs, batch_size=500)
        ledger.copy_event_rows(event_rows)
        _copy_messages(thread, rows)
        head = max((r for r in rows if r[8]), key=lambda r: r[3], default=None)
        Thread.objects.filter(pk=thread.pk).update(
            head_id=head[0] if head else None,
            created_at=thread.created_at,
            updated_at=thread.updated_at,
        )
    thread.refresh_from_db()
    return thread


_RUN_TEXT = {"generator": 100, "model": 200}
_RUN_JSON = ("parameters", "metadata", "usage", "error")


def _check_runs(tree: TreeThread) -> None:
    """Refuse run fields and events that cannot be stored, naming each by its path."""
    problems: list[dict[str, str]] = []
    for index, run in enumerate(tree.runs):
        if not isinstance(run, dict):
            continue
        where = f"runs[{index}]"
        for key, limit in _RUN_TEXT.items():
            value = run.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                problems.append({"path": f"{where}.{key}", "message": "expected a string"})
            elif len(value) > limit:
                problems.append(
                    {"path": f"{where}.{key}", "message": f"longer than {limit} characters"}
                )
            else:
                try:
                    to_storable_json(value, f"{where}.{key}")
                except InvalidEvents as exc:
                    problems.extend(p.as_dict() for p in exc.problems)
        for key in _RUN_JSON:
            value = run.get(key)
            if value is None:
                continue
            if not isinstance(value, dict):
                problems.append({"path": f"{where}.{key}", "message": "expected an object"})
                continue
            try:
                to_storable_json(value, f"{where}.{key}")
            except InvalidEvents as exc:
                problems.extend(p.as_dict() for p in exc.problems)
        events = run.get("events")
        if events is not None:
            if not isinstance(events, list):
                problems.append({"path": f"{where}.events", "message": "expected an array"})
                continue
            try:
                check_events(events)
            except InvalidEvents as exc:
                problems.extend(
                    {"path": f"{where}.{p.path}", "message": p.message} for p in exc.problems
                )
    if problems:
        raise InvalidInput(f"{problems[0]['path']}: {problems[0]['message']}", problems=problems)


def _checked(events: list[Any], where: str) -> list[CheckedEvent]:
    try:
        return check_events(events)
    except InvalidEvents as exc:  # already reported by _check_runs; kept for safety
        raise InvalidInput(f"{where}: {exc}") from None


def _kept_events(
    chain: _Chain, run: Run, ids: Mapping[str, str]
) -> tuple[list[CheckedEvent], list[tuple[int, int]]] | None:
    """The run's exported events and each message's seq range, when they can be kept as is.

    That needs the run and its messages under their own ids and the events projecting to
    exactly those messages; else None (the messages are then recorded as `message` events).
    """
    events_in = chain.source.get("events")
    if not isinstance(events_in, list) or run.id != chain.source.get("id"):
        return None
    if any(ids[key] != key for key in chain.keys):
        return None
    if chain.fork_key is not None and ids[chain.fork_key] != chain.fork_key:
        return None
    checked = _checked(events_in, "events")
    try:
        projection = project(
            ({"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at} for e in checked),
            run_id=run.id,
            parent_id=run.fork_from_id,
        )
    except (ValueError, KeyError, TypeError):
        return None
    if [m["id"] for m in projection.messages] != chain.keys:
        return None
    return checked, list(projection.seq_ranges)


def _empty_run_status(
    source: dict[str, Any], winner: str | None
) -> tuple[str, dict[str, Any] | None, str | None]:
    """Status, error and superseding run of an imported run that has no messages."""
    state = source.get("status")
    error = source.get("error") if isinstance(source.get("error"), dict) else None
    if state in (RunStatus.FAILED, RunStatus.CANCELLED):
        return state, error, None
    if state in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        if winner is not None:
            return RunStatus.SUPERSEDED, error, winner
        return RunStatus.COMMITTED, error, None
    # A run that was queued or streaming when exported has no generator any more: closing
    # it keeps workers from picking it up, and the error says what it was.
    return (
        RunStatus.CANCELLED,
        {
            "code": "imported",
            "message": f"the run was {state or 'open'} when the thread was exported",
        },
        None,
    )


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
        model=str(source.get("model") or ""),
        parameters=_dict(source.get("parameters")),
        metadata=_dict(source.get("metadata")),
        usage=_dict(source.get("usage")),
        error=error
        if error is not None
        else (source.get("error") if isinstance(source.get("error"), dict) else None),
        created_at=_parse_time(source.get("createdAt")) or first,
        started_at=first,
        first_event_at=first,
        finished_at=_parse_time(source.get("finishedAt")) or (last if finished else None),
        last_seq=last_seq,
        # Foreign keys are checked at commit, so a run may point at a later one.
        superseded_by_id=superseded_by,
    )


_MESSAGE_COLUMNS = (
    "id, parent_id, run_id, depth, position, role, parts, metadata, created_at, active,"
    " thread_id, first_seq, last_seq, flag_reason"
)


def _copy_messages(thread: Thread, rows: list[tuple[Any, ...]]) -> None:
    """COPY materialized messages; parts and metadata come from each event's JSON."""
    thread_uuid = to_uuid(thread.id)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY transcripts_message ({_MESSAGE_COLUMNS}) FROM STDIN") as copy,
    ):
        for message_id, parent, run_id, depth, position, role, data_json, at, active, seqs in rows:
            data = json.loads(data_json)
            metadata = {"schemaVersion": SCHEMA_VERSION, **(data.get("metadata") or {})}
            metadata["schemaVersion"] = SCHEMA_VERSION
            copy.write_row(
                (
                    to_uuid(message_id),
                    to_uuid(parent) if parent else None,
                    to_uuid(run_id),
                    depth,
                    position,
                    role,
                    json.dumps(data["parts"], ensure_ascii=False),
                    json.dumps(metadata, ensure_ascii=False),
                    at,
                    active,
                    thread_uuid,
                    seqs[0],
                    seqs[1],
                    "",
                )
            )


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _run_ids(sources: list[dict[str, Any]], keep_ids: bool) -> list[str]:
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


def _depths(tree: TreeThread, by_key: Mapping[str, dict[str, Any]]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for key, message in by_key.items():
        parent = message.get("parentMessageId")
        depth[key] = 0 if parent is None else depth[parent] + 1
    return depth


def _message_event(message: dict[str, Any], message_id: str, moment: datetime) -> dict[str, Any]:
    metadata = {k: v for k, v in _dict(message.get("metadata")).items() if k != "schemaVersion"}
    original = message.get("id")
    if original != message_id and "sourceMessageId" not in metadata:
        metadata["sourceMessageId"] = original
    return {
        "role": message.get("role"),
        "parts": message.get("parts"),
        "id": message_id,
        "metadata": metadata,
        "createdAt": _iso(moment),
    }
