"""Planning an import, without the database: checks, runs (chains), statuses, depths, events.

A tree of messages becomes runs whose `message` events project to exactly those messages;
`importing.py` writes what is planned here.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import orjson
from pydantic import ValidationError

from transcripts.errors import InvalidEvents, InvalidInput
from transcripts.events import CheckedEvent, check_events, max_json_depth, to_storable_json
from transcripts.formats.document import TreeThread, make_message
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_object,
    as_str,
    list_of,
    native_json_allowed,
    object_of,
    objects_in,
)
from transcripts.message_schema import SCHEMA_VERSION, Message, full_parts
from transcripts.models import RunStatus
from transcripts.projector import project
from transcripts.times import to_iso, unstorable_reason

# Compact JSON for the general path's rows (the fast path writes the same with orjson).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


@dataclass
class Chain:
    """The messages one imported run holds, in order."""

    run_id: str
    fork_key: str | None
    keys: list[str]
    source: JsonObject


def object_or_empty(value: object) -> JsonObject:
    """value when it is a JSON object, else an empty one."""
    return dict(value) if isinstance(value, dict) else {}


def messages_by_key(tree: TreeThread) -> dict[str, JsonObject]:
    """The tree's messages by their id, or InvalidInput when ids or parents do not hold up."""
    by_key: dict[str, JsonObject] = {}
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


def parent_of(message: JsonObject) -> str | None:
    """The parent id of a message of messages_by_key (which checked it is None or an id)."""
    return as_str(message.get("parentMessageId"))


def chains(tree: TreeThread, by_key: Mapping[str, JsonObject]) -> list[Chain]:
    """Group messages into runs: the exported runs when given, else maximal linear chains."""
    listed = [r for r in tree.runs if isinstance(r, dict) and list_of(r.get("messageIds"))]
    claimed: set[str] = set()
    result: list[Chain] = []
    for run in listed:
        keys = [
            k
            for k in list_of(run["messageIds"])
            if k in by_key and isinstance(k, str) and k not in claimed
        ]
        if not keys or any(parent_of(by_key[keys[i]]) != keys[i - 1] for i in range(1, len(keys))):
            continue
        claimed.update(keys)
        result.append(Chain("", parent_of(by_key[keys[0]]), keys, run))
    children: dict[str | None, list[str]] = defaultdict(list)
    for key, message in by_key.items():
        if key not in claimed:
            children[parent_of(message)].append(key)
    for key, message in by_key.items():
        if key in claimed:
            continue
        parent = parent_of(message)
        # A chain starts at a root, a fork point's child, or the child of a listed run.
        if parent is not None and parent not in claimed and len(children[parent]) == 1:
            continue
        keys = [key]
        while len(children[keys[-1]]) == 1:
            keys.append(children[keys[-1]][0])
        claimed.update(keys)
        result.append(Chain("", parent, keys, {}))
    return result


def statuses(
    planned: list[Chain], active: set[str]
) -> tuple[dict[int, str], dict[int, int | None]]:
    """Per chain: status and superseding chain, so each fork point has one committed run."""
    status: dict[int, str] = {}
    superseded_by: dict[int, int | None] = {}
    by_fork: dict[str | None, list[int]] = defaultdict(list)
    for index, chain in enumerate(planned):
        by_fork[chain.fork_key].append(index)
    by_source = {c.source.get("id"): i for i, c in enumerate(planned) if c.source.get("id")}
    for indexes in by_fork.values():
        winners = [i for i in indexes if planned[i].keys[0] in active]
        winner = winners[0] if winners else indexes[-1]
        for index in indexes:
            status[index] = RunStatus.COMMITTED if index == winner else RunStatus.SUPERSEDED
            superseded_by[index] = None if index == winner else winner
            # The exported supersededBy, when it names another run at this fork point.
            named = by_source.get(planned[index].source.get("supersededBy"))
            if index != winner and named is not None and named != index and named in indexes:
                superseded_by[index] = named
    return status, superseded_by


def active_keys(tree: TreeThread, by_key: Mapping[str, JsonObject]) -> set[str]:
    """Ids of the messages on the active path: up from the active leaf (else the last one)."""
    leaf = tree.active_leaf
    if leaf is None and tree.messages:
        leaf = as_str(tree.messages[-1].get("id"))
    active: set[str] = set()
    while leaf is not None:
        active.add(leaf)
        leaf = parent_of(by_key[leaf])
    return active


def depths(by_key: Mapping[str, JsonObject]) -> dict[str, int]:
    """Each message's depth in the tree (parents come before their children)."""
    depth: dict[str, int] = {}
    for key, message in by_key.items():
        parent = parent_of(message)
        depth[key] = 0 if parent is None else depth[parent] + 1
    return depth


_RUN_TEXT = {"generator": 100, "model": 200}
_RUN_JSON = ("parameters", "metadata", "usage", "error")


def check_runs(tree: TreeThread) -> None:
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


def checked_events(events: list[JsonValue], where: str) -> list[CheckedEvent]:
    """events checked, or InvalidInput (check_runs has already reported what it would say)."""
    try:
        return check_events(events)
    except InvalidEvents as exc:
        raise InvalidInput(f"{where}: {exc}") from None


def message_event(message: JsonObject, message_id: str, moment: datetime) -> JsonObject:
    """The data of the `message` event that records an imported message under message_id."""
    metadata = {
        k: v for k, v in object_or_empty(message.get("metadata")).items() if k != "schemaVersion"
    }
    original = message.get("id")
    if original != message_id and "sourceMessageId" not in metadata:
        metadata["sourceMessageId"] = original
    return {
        "role": message.get("role"),
        "parts": message.get("parts"),
        "id": message_id,
        "metadata": metadata,
        "createdAt": to_iso(moment),
    }


def projected_message(
    data: JsonObject, parent_id: str | None, tool_names: dict[str, str]
) -> JsonObject:
    """What the projector makes of a checked `message` event's data (the suite holds it to
    that), so that import materializes it without projecting.

    tool_names holds the tool calls of the run's earlier messages, as the projector's does.
    """
    return make_message(
        str(data["id"]),
        parent_id,
        str(data["role"]),
        full_parts(objects_in(data["parts"]), tool_names),
        as_str(data["createdAt"]),
        # The stored version, whatever the event's metadata said.
        {k: v for k, v in object_of(data.get("metadata")).items() if k != "schemaVersion"},
    )


def message_events(messages: list[tuple[JsonObject, str, datetime]]) -> list[CheckedEvent]:
    """The checked `message` events recording (message, new id, time) triples, seq 1 on."""
    datas = [message_event(message, id_, at) for message, id_, at in messages]
    events = [
        {"seq": seq, "kind": "message", "data": data, "at": data["createdAt"]}
        for seq, data in enumerate(datas, start=1)
    ]
    try:
        return check_events(events)
    except InvalidEvents as exc:
        raise InvalidInput(
            f"invalid message in the import: {exc}",
            problems=[p.as_dict() for p in exc.problems],
        ) from None


@dataclass(frozen=True, slots=True)
class RecordedMessage:
    """An imported message recorded as a checked `message` event, with what the stored
    message row holds (what the projector makes of the event): its role, its parts and
    metadata as JSON text, and its time."""

    event: CheckedEvent
    role: str
    parts_json: str
    metadata_json: str
    created_at: str


def recorded_messages(messages: list[tuple[JsonObject, str, datetime]]) -> list[RecordedMessage]:
    """One run's messages (message, new id, time) as checked `message` events, seq 1 on, and
    the rows they project to; InvalidInput as message_events says for a message it refuses.

    Messages are checked and encoded once each by a fast path that accepts exactly what
    check_events does; a run with anything it cannot vouch for takes the general path
    (check_events, then the projector's parts and metadata), which also words the refusal.
    """
    fast = fast_recorded(messages)
    return fast if fast is not None else general_recorded(messages)


def general_recorded(messages: list[tuple[JsonObject, str, datetime]]) -> list[RecordedMessage]:
    """recorded_messages by check_events and the projector's parts and metadata."""
    recorded: list[RecordedMessage] = []
    tool_names: dict[str, str] = {}
    for event in message_events(messages):
        projected = projected_message(event.data, None, tool_names)
        recorded.append(
            RecordedMessage(
                event,
                str(projected["role"]),
                _JSON.encode(projected["parts"]),
                _JSON.encode(projected["metadata"]),
                str(projected["createdAt"]),
            )
        )
    return recorded


# Part types the projector stores as they come (full_parts changes the others: it fills a tool
# call's input, a tool result's name, output and error flag, and drops a null signature/name).
_PLAIN_PARTS = frozenset({"text"})
_NULL_MEANS_NONE = {"reasoning": "signature", "file": "name"}
_VERSION_ONLY = f'{{"schemaVersion":{SCHEMA_VERSION}}}'
_VERSION_FIRST = f'{{"schemaVersion":{SCHEMA_VERSION},'


def _stored_as_given(parts: list[JsonValue]) -> bool:
    """Whether full_parts would give back parts unchanged (copies equal to them)."""
    for part in parts:
        if type(part) is not dict:
            return False
        kind = part.get("type")
        if kind in _PLAIN_PARTS:
            continue
        dropped = _NULL_MEANS_NONE.get(kind) if isinstance(kind, str) else None
        if dropped is None or part.get(dropped, "") is None:
            return False
    return True


def _strict_json(value: object) -> bytes:
    """value as the event checks store it (InvalidEvents when it cannot be), in UTF-8."""
    return to_storable_json(value, "data").encode()


def fast_recorded(
    messages: list[tuple[JsonObject, str, datetime]],
) -> list[RecordedMessage] | None:
    """recorded_messages for messages that are certainly valid, else None.

    What check_event does for a `message` event, in order of cost: the data's schema
    (pydantic, as there), its time, its nesting (no deeper than the count of its opening
    brackets), and its storable JSON: orjson refuses lone surrogates, integers past 64 bits
    and non-string keys, and a NUL shows as an escaped u0000; orjson writes NaN and infinities as
    null, so a message whose JSON holds a null is also encoded by the strict encoder. Under
    an address-space cap the strict encoder does it all (see native_json_allowed).
    """
    depth_limit = max_json_depth()
    native = native_json_allowed()
    encode = orjson.dumps if native else _strict_json
    recorded: list[RecordedMessage] = []
    for seq, (message, message_id, moment) in enumerate(messages, start=1):
        data = message_event(message, message_id, moment)
        parts = data["parts"]
        metadata = data["metadata"]
        if type(parts) is not list or not _stored_as_given(parts) or type(message_id) is not str:
            return None
        try:
            Message.model_validate(data)
            parts_json = encode(parts)
            metadata_json = encode(metadata)
            id_json = encode(message_id)
        except (ValidationError, TypeError, InvalidEvents):  # orjson's errors are TypeErrors
            return None
        if unstorable_reason(moment) is not None:
            return None
        opened = 1 + sum(
            text.count(b"{") + text.count(b"[") for text in (parts_json, metadata_json)
        )
        if opened > depth_limit or b"\\u0000" in parts_json + metadata_json + id_json:
            return None
        if native and (b"null" in parts_json or b"null" in metadata_json):
            try:
                to_storable_json(data, "data")
            except InvalidEvents:
                return None
        role = str(data["role"])
        created_at = str(data["createdAt"])
        parts_text = parts_json.decode()
        metadata_text = metadata_json.decode()
        data_json = (
            f'{{"role":"{role}","parts":{parts_text},"id":{id_json.decode()},'
            f'"metadata":{metadata_text},"createdAt":"{created_at}"}}'
        )
        recorded.append(
            RecordedMessage(
                CheckedEvent(seq, "message", data, moment, data_json),
                role,
                parts_text,
                _VERSION_ONLY if metadata_text == "{}" else _VERSION_FIRST + metadata_text[1:],
                created_at,
            )
        )
    return recorded


def kept_events(
    chain: Chain, run_id: str, fork_from_id: str | None, ids: Mapping[str, str]
) -> tuple[list[CheckedEvent], list[tuple[int, int]]] | None:
    """The run's exported events and each message's seq range, when they can be kept as is.

    That needs the run and its messages under their own ids and the events projecting to
    exactly those messages; else None (the messages are then recorded as `message` events).
    """
    events_in = chain.source.get("events")
    if not isinstance(events_in, list) or run_id != chain.source.get("id"):
        return None
    if any(ids[key] != key for key in chain.keys):
        return None
    if chain.fork_key is not None and ids[chain.fork_key] != chain.fork_key:
        return None
    checked = checked_events(events_in, "events")
    try:
        projection = project(
            ({"seq": e.seq, "kind": e.kind, "data": e.data, "at": e.at} for e in checked),
            run_id=run_id,
            parent_id=fork_from_id,
        )
    except (ValueError, KeyError, TypeError):
        return None
    if [m["id"] for m in projection.messages] != chain.keys:
        return None
    return checked, list(projection.seq_ranges)


def empty_run_status(
    source: JsonObject, winner: str | None
) -> tuple[str, JsonObject | None, str | None]:
    """Status, error and superseding run of an imported run that has no messages."""
    state = source.get("status")
    error = as_object(source.get("error"))
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
