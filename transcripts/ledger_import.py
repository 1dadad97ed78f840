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
from transcripts.errors import InvalidInput
from transcripts.events import InvalidEvents, check_events
from transcripts.fields import to_uuid
from transcripts.formats.tree import TreeThread
from transcripts.ids import derived_ulid, is_ulid, new_ulid
from transcripts.models import Message, Run, RunStatus, Thread
from transcripts.projector import SCHEMA_VERSION


@dataclass
class _Chain:
    """The messages one imported run holds, in order."""

    run_id: str
    fork_key: str | None
    keys: list[str]
    source: dict[str, Any]


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


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
    for indexes in by_fork.values():
        winners = [i for i in indexes if chains[i].keys[0] in active]
        winner = winners[0] if winners else indexes[-1]
        for index in indexes:
            status[index] = RunStatus.COMMITTED if index == winner else RunStatus.SUPERSEDED
            superseded_by[index] = None if index == winner else winner
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


def import_tree(tree: TreeThread, *, keep_ids: bool = True) -> Thread:
    """Write a whole thread (every branch) through the ledger, in one transaction.

    Ids that are ULIDs not used yet are kept (so a canonical export re-imports as itself);
    other ids get fresh ULIDs, the original kept in metadata.sourceMessageId.
    """
    by_key = _check_tree(tree)
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
        run_ids = _run_ids(chains, keep_ids)
        runs: list[Run] = []
        for index, chain in enumerate(chains):
            chain.run_id = run_ids[index]
            first = times[chain.keys[0]]
            finished = status[index] in (RunStatus.COMMITTED, RunStatus.SUPERSEDED)
            runs.append(
                Run(
                    id=chain.run_id,
                    thread=thread,
                    fork_from_id=ids[chain.fork_key] if chain.fork_key else None,
                    status=status[index],
                    generator=str(chain.source.get("generator") or "import"),
                    model=str(chain.source.get("model") or ""),
                    parameters=_dict(chain.source.get("parameters")),
                    metadata=_dict(chain.source.get("metadata")),
                    usage=_dict(chain.source.get("usage")),
                    error=chain.source.get("error")
                    if isinstance(chain.source.get("error"), dict)
                    else None,
                    created_at=_parse_time(chain.source.get("createdAt")) or first,
                    started_at=first,
                    first_event_at=first,
                    finished_at=_parse_time(chain.source.get("finishedAt"))
                    or (times[chain.keys[-1]] if finished else None),
                    last_seq=len(chain.keys),
                    # Foreign keys are checked at commit, so a run may point at a later one.
                    superseded_by_id=(
                        run_ids[superseded_by[index] or 0]
                        if superseded_by.get(index) is not None
                        else None
                    ),
                )
            )
        depth = _depths(tree, by_key)
        Run.objects.bulk_create(runs, batch_size=500)
        rows: list[tuple[Any, ...]] = []
        event_rows: list[tuple[Any, ...]] = []
        thread_uuid = to_uuid(thread.id)
        for chain, run in zip(chains, runs, strict=True):
            events = [
                {
                    "seq": seq,
                    "kind": "message",
                    "data": _message_event(by_key[key], ids[key], times[key]),
                    "at": _iso(times[key]),
                }
                for seq, key in enumerate(chain.keys, start=1)
            ]
            try:
                checked = check_events(events)
            except InvalidEvents as exc:
                raise InvalidInput(
                    f"invalid message in the import: {exc}",
                    problems=[p.as_dict() for p in exc.problems],
                ) from None
            run_uuid = to_uuid(run.id)
            event_rows.extend(
                (thread_uuid, run_uuid, e.seq, e.kind, e.data_json, e.at or now) for e in checked
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
                    )
                )
                parent = data["id"]
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
        for message_id, parent, run_id, depth, position, role, data_json, at, active in rows:
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
                    position + 1,
                    position + 1,
                    "",
                )
            )


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _run_ids(chains: list[_Chain], keep_ids: bool) -> list[str]:
    wanted = [c.source.get("id") for c in chains]
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
