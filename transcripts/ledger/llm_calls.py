"""LLM calls read from OpenTelemetry spans into a thread's message tree, exactly once.

The spans of one conversation (its `gen_ai.conversation.id`, else the trace id) are one
thread whose `external_id` is that id, in the caller's project. The calls of one trace are one
unit of work (an agent run calling the model, a tool, the model again): each call's input is
the previous call's input and output plus the tool results, so the unit's messages are the
longest such history plus the last answer. A unit is walked from the root of the tree along
children with the same role and parts: what matches is reused, the rest becomes one committed
run forked from the last match. A history that differs from what is stored (an edited turn, a
regenerated answer) thus becomes a sibling branch at the divergence; the same spans again
match everything and write nothing.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import DataError, transaction
from pydantic import ValidationError

from transcripts.errors import DomainError, InvalidInput, NotFound
from transcripts.formats.otlp.model import CallMessage, LlmCall
from transcripts.jsonvalue import JsonObject, JsonValue, object_of, objects_in, text_of
from transcripts.ledger.append import Reach, append_events
from transcripts.ledger.lifecycle import commit_run, restore_run
from transcripts.ledger.runs import begin_run
from transcripts.ledger.storable import check_storable
from transcripts.ledger.threads import MAX_EXTERNAL_ID, find_or_create_external
from transcripts.message_schema import Message as CanonicalMessage
from transcripts.message_schema import error_path, full_parts
from transcripts.models import Message, Project, RunOrigin, Thread
from transcripts.times import parse_iso

TITLE_LENGTH = 80
GENERATOR = "otel"
# Semconv finish reasons under the names the event vocabulary uses (the AI SDK's).
_FINISH_REASONS = {
    "tool_call": "tool-calls",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
}


@dataclass
class _Entry:
    """One message of a unit: canonical role and parts, its metadata, when it happened, and
    the step it closes (the answer of a call: finish reason and usage) if any."""

    role: str
    parts: list[JsonObject]
    metadata: JsonObject
    at_ns: int
    step: JsonObject | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return content_key(self.role, self.parts)


@dataclass
class _Unit:
    """The calls of one trace that extend each other, as one sequence of messages."""

    calls: list[LlmCall] = field(default_factory=list)
    entries: list[_Entry] = field(default_factory=list)


@dataclass
class RecordedLlmCalls:
    """What recording LLM calls did: runs written, and the calls refused with why."""

    runs: list[str] = field(default_factory=list)
    rejected: list[tuple[LlmCall, str]] = field(default_factory=list)


def content_key(role: str, parts: list[JsonObject]) -> str:
    """What makes two messages the same message: role and parts as stored (no metadata)."""
    return json.dumps([role, full_parts(parts, {})], sort_keys=True, separators=(",", ":"))


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat()


def _call_metadata(call: LlmCall) -> JsonObject:
    span = call.span
    otel: JsonObject = {
        "convention": call.convention,
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "startedAt": _iso(span.start_ns),
        "durationMs": round(max(span.end_ns - span.start_ns, 0) / 1e6, 3),
    }
    if call.response_id:
        otel["responseId"] = call.response_id
    meta: JsonObject = {"otel": otel}
    if call.model:
        meta["model"] = call.model
    if call.provider:
        meta["provider"] = call.provider
    if call.agent_name:
        meta["agentId"] = call.agent_name
    return meta


def _jsonable(value: object) -> JsonValue:
    """value with what JSON cannot hold made plain: bytes as base64, tuples as lists."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _parts(message: CallMessage) -> list[JsonObject]:
    """A message's parts made plain (each part is a dict, as conventions write them)."""
    return objects_in(_jsonable(message["parts"]))


def _entries(call: LlmCall) -> list[_Entry]:
    """The call's input and output as entries; the last output message closes the step."""
    start, end = call.span.start_ns, call.span.end_ns or call.span.start_ns
    entries = [
        _Entry(m["role"], _parts(m), object_of(_jsonable(m.get("metadata") or {})), start)
        for m in call.input_messages
    ]
    outputs = [
        _Entry(
            m["role"],
            _parts(m),
            {**object_of(_jsonable(m.get("metadata") or {})), **_call_metadata(call)},
            end,
        )
        for m in call.output_messages
    ]
    step: JsonObject = {}
    if call.finish_reason:
        step["finishReason"] = _FINISH_REASONS.get(call.finish_reason, call.finish_reason)
    if call.usage:
        step["usage"] = _jsonable(call.usage)
    if outputs:
        outputs[-1].step = step or None
        outputs[-1].error = call.error
    elif call.error and entries:
        entries[-1].error = call.error
    return entries + outputs


def _check(entries: list[_Entry]) -> None:
    """Refuse (InvalidInput) a message a convention made that is not canonical."""
    for entry in entries:
        try:
            CanonicalMessage.model_validate({"role": entry.role, "parts": entry.parts})
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InvalidInput(
                f"not a canonical {entry.role} message: {error_path(first)}: {first['msg']}"
            ) from None


def _fill_tool_names(entries: list[_Entry]) -> None:
    """Give each tool result the name of the call it answers (as the projector would), so the
    stored parts and the parts compared are the same."""
    names: dict[str, str] = {}
    for entry in entries:
        entry.parts = full_parts(entry.parts, names)


def _units(calls: Iterable[LlmCall]) -> list[_Unit]:
    """The calls grouped by trace, each trace's calls chained while each extends the last."""
    by_trace: dict[str, list[LlmCall]] = defaultdict(list)
    for call in calls:
        by_trace[call.span.trace_id].append(call)
    units: list[_Unit] = []
    for trace_calls in by_trace.values():
        trace_calls.sort(key=lambda c: (c.span.start_ns, c.span.end_ns, c.span.span_id))
        unit: _Unit | None = None
        for call in trace_calls:
            entries = _entries(call)
            _check(entries)
            _fill_tool_names(entries)
            keys = [e.key for e in entries]
            if unit is not None and [e.key for e in unit.entries] == keys[: len(unit.entries)]:
                # The same history grown: keep what the unit has (its answers' metadata).
                unit.entries.extend(entries[len(unit.entries) :])
                unit.calls.append(call)
                continue
            unit = _Unit(calls=[call], entries=entries)
            units.append(unit)
    units.sort(key=lambda u: (u.calls[0].span.start_ns, u.calls[0].span.span_id))
    return units


@dataclass
class _Tree:
    """The thread's messages by parent, with their content keys."""

    children: dict[str | None, list[tuple[str, str, bool]]]

    @classmethod
    def load(cls, thread: Thread) -> _Tree:
        tree = cls(children=defaultdict(list))
        rows = Message.objects.filter(thread=thread).values_list(
            "id", "parent_id", "role", "parts", "active"
        )
        tree.add(rows)
        return tree

    def add(self, rows: Iterable[tuple[str, str | None, str, list[JsonObject], bool]]) -> None:
        for message_id, parent_id, role, parts, active in rows:
            self.children[parent_id].append((message_id, content_key(role, parts), active))

    def walk(self, entries: list[_Entry]) -> tuple[str | None, int]:
        """The last stored message matching a prefix of entries, and how many matched."""
        parent: str | None = None
        for matched, entry in enumerate(entries):
            key = entry.key
            same = [(active, mid) for mid, k, active in self.children.get(parent, ()) if k == key]
            if not same:
                return parent, matched
            # The active branch first, else the newest (ULIDs sort by time).
            parent = max(same)[1]
        return parent, len(entries)


def _thread_for(project: Project, external_id: str, title: str, within: Reach | None) -> Thread:
    """The thread of external_id in project, created when new; locked for this transaction.

    A thread out of within's reach (a hidden one, for a token without the admin scope) is
    NotFound, as the events API answers for it: nothing says that it exists.
    """
    if len(external_id) > MAX_EXTERNAL_ID:
        raise InvalidInput(
            f"a conversation id longer than {MAX_EXTERNAL_ID} characters", field="externalId"
        )
    check_storable(external_id, "externalId")
    try:
        check_storable(title, "title")
    except InvalidInput:
        title = ""  # the first message is refused with its reason when it is appended
    thread, _ = find_or_create_external(
        project=project, external_id=external_id, title=title[:TITLE_LENGTH]
    )
    thread = Thread.objects.select_for_update().get(pk=thread.pk)
    if within is not None and not (within.hidden if thread.hidden else within.visible):
        raise NotFound(f"the thread of conversation {external_id} does not exist")
    return thread


def _first_user_text(units: list[_Unit]) -> str:
    for unit in units:
        for entry in unit.entries:
            if entry.role == "user":
                for part in entry.parts:
                    if part.get("type") == "text" and text_of(part.get("text")).strip():
                        return " ".join(str(part["text"]).split())
    return ""


def _events(entries: list[_Entry]) -> list[JsonObject]:
    events: list[JsonObject] = []
    for entry in entries:
        at = _iso(entry.at_ns) if entry.at_ns else None
        data: JsonObject = {"role": entry.role, "parts": entry.parts, "metadata": entry.metadata}
        if at is not None:
            data["createdAt"] = at
        events.append({"kind": "message", "data": data, **({"at": at} if at else {})})
        if entry.step is not None:
            events.append({"kind": "step-finished", "data": entry.step})
        if entry.error is not None:
            events.append({"kind": "error", "data": {"message": entry.error}})
    for seq, event in enumerate(events, start=1):
        event["seq"] = seq
    return events


def _register_agents(thread: Thread, units: list[_Unit]) -> None:
    """Add the agents the calls name to the thread's registry (ThreadProtocol's shape)."""
    agents = dict(thread.agents or {})
    for unit in units:
        for call in unit.calls:
            name = call.agent_name
            if name and name not in agents:
                agents[name] = {"agent_id": name, "agent_name": name, "source": GENERATOR}
    if agents != thread.agents:
        Thread.objects.filter(pk=thread.pk).update(agents=agents)
        thread.agents = agents


def _newer_head_run(thread: Thread, start_ns: int) -> str | None:
    """The run of the thread's head when its call started after start_ns, else None."""
    thread.refresh_from_db(fields=["head"])
    if thread.head_id is None:
        return None
    head = Message.objects.filter(pk=thread.head_id).values_list("run_id", "metadata").first()
    if head is None:
        return None
    run_id, metadata = head
    otel = metadata.get("otel") if isinstance(metadata, dict) else None
    started = otel.get("startedAt") if isinstance(otel, dict) else None
    moment = parse_iso(started) if isinstance(started, str) else None
    if moment is None or moment.timestamp() * 1e9 <= start_ns:
        return None
    return str(run_id)


def _record_conversation(
    project: Project, external_id: str, calls: list[LlmCall], within: Reach | None
) -> list[str]:
    units = _units(calls)
    thread = _thread_for(project, external_id, _first_user_text(units), within)
    tree = _Tree.load(thread)
    written: list[str] = []
    for unit in units:
        fork, matched = tree.walk(unit.entries)
        remaining = unit.entries[matched:]
        if not remaining:
            continue  # everything is stored already: a retry, or an earlier part of a history
        last = unit.calls[-1]
        run, _ = begin_run(
            thread=thread,
            fork_from=fork,
            generator=GENERATOR,
            model=(last.model or "")[:200],
            metadata={
                "otel": {
                    "traceId": last.span.trace_id,
                    "spanIds": [c.span.span_id for c in unit.calls],
                    "responseIds": [c.response_id for c in unit.calls if c.response_id],
                    "convention": last.convention,
                }
            },
            origin=RunOrigin.API,
        )
        newer = _newer_head_run(thread, last.span.start_ns)
        append_events(run=run, events=_events(remaining))
        commit_run(run=run)
        if newer is not None:
            # A call older than the branch shown arrived late: stored, but the newest stays.
            restore_run(run=newer)
        tree.add(
            Message.objects.filter(run=run).values_list(
                "id", "parent_id", "role", "parts", "active"
            )
        )
        written.append(run.id)
    _register_agents(thread, units)
    return written


def record_llm_calls(
    *, project: Project, calls: Iterable[LlmCall], within: Reach | None = None
) -> RecordedLlmCalls:
    """Store LLM calls into their conversations' threads in project (only threads within
    reach, when given: a caller's token).

    Each conversation is written in one transaction: a conversation that cannot be stored (a
    locked thread, one out of reach, content PostgreSQL cannot hold) leaves nothing behind and
    its calls are returned as rejected, while the other conversations are stored.
    """
    by_conversation: dict[str, list[LlmCall]] = defaultdict(list)
    result = RecordedLlmCalls()
    for call in calls:
        key = call.conversation_id or call.span.trace_id
        if key:
            by_conversation[key].append(call)
        else:
            result.rejected.append((call, "a span needs a trace id or a gen_ai.conversation.id"))
    for external_id, group in by_conversation.items():
        try:
            with transaction.atomic():
                result.runs.extend(_record_conversation(project, external_id, group, within))
        except DomainError as exc:
            result.rejected.extend((call, str(exc)) for call in group)
        except DataError:
            reason = "the span holds a value PostgreSQL cannot store"
            result.rejected.extend((call, reason) for call in group)
    return result
