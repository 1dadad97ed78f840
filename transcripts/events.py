"""The event vocabulary: what may be appended to a run's log, checked before it is stored."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import TypeAdapter, ValidationError

from transcripts.errors import DomainError, GeneratorError, InvalidEvents, Problem
from transcripts.jsonvalue import JsonObject, JsonValue
from transcripts.message_schema import (
    ROLES,
    FileFields,
    Message,
    MessageRole,
    ReasoningFields,
    ToolCallFields,
    ToolResultFields,
    WireModel,
    error_path,
)
from transcripts.projector import REDACTION_TEXT
from transcripts.times import unstorable_reason

# Data schemas per kind. Extra fields are kept in the stored event; the projector ignores
# them. The kinds that carry one part's content share its fields with the part schema.


class MessageStart(WireModel):
    """Opens a message of the given role; content events after it go into it."""

    role: MessageRole
    messageId: str | None = None
    agentId: str | None = None
    metadata: dict[str, object] | None = None


class TextDelta(WireModel):
    """A chunk of text, appended to the open message's text."""

    delta: str


class StepStarted(WireModel):
    """A model step begins."""


class StepFinished(WireModel):
    """A model step ends, with its finish reason and token usage."""

    finishReason: str | None = None
    usage: dict[str, object] | None = None


class Error(WireModel):
    """Something went wrong in the run."""

    message: str
    code: str | int | None = None


class MessageEnd(WireModel):
    """Closes the open message."""


DATA_SCHEMAS: dict[str, type[WireModel]] = {
    "message-start": MessageStart,
    "text-delta": TextDelta,
    "reasoning": ReasoningFields,
    "tool-call": ToolCallFields,
    "tool-result": ToolResultFields,
    "file": FileFields,
    "step-started": StepStarted,
    "step-finished": StepFinished,
    "error": Error,
    "message": Message,
    "message-end": MessageEnd,
}
KINDS = tuple(DATA_SCHEMAS)
OPEN_KIND_PREFIXES = ("data-", "system.")
MAX_KIND_LENGTH = 200


def is_known_kind(kind: str) -> bool:
    """Whether kind belongs to the v1 vocabulary (including data-* and system.*)."""
    if kind in DATA_SCHEMAS:
        return True
    return any(kind.startswith(p) and len(kind) > len(p) for p in OPEN_KIND_PREFIXES)


class EventEnvelope(TypedDict):
    """An event as a client appends it and the log stores it: its number in the run, its
    kind, its data (an object for the kinds with a schema) and, optionally, when it happened
    (ISO 8601 text on the way in, a datetime read back from the database)."""

    seq: int
    kind: str
    data: JsonValue
    at: NotRequired[datetime | str | None]


@dataclass(frozen=True)
class CheckedEvent:
    """An event that passed validation, with its JSON text ready for storage."""

    seq: int
    kind: str
    data: Any  # JsonValue; Any until ledger.append and ledger.importing narrow it
    at: datetime | None
    data_json: str


def max_json_depth() -> int:
    """How deeply stored JSON may nest (deeper data breaks recursive readers later)."""
    from django.conf import settings

    return int(getattr(settings, "TRANSCRIPTS_MAX_JSON_DEPTH", 64))


_CONTAINERS = (dict, list)


def _children(container: dict[str, object] | list[object]) -> Iterable[object]:
    return container.values() if type(container) is dict else container


def nests_deeper_than(value: object, limit: int) -> bool:
    """Whether value (parsed JSON) has containers nested more than limit levels deep."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(limit):
        if not level:
            return False
        level = [
            child for item in level for child in _children(item) if isinstance(child, _CONTAINERS)
        ]
    return bool(level)


def _locate_unstorable(value: object, path: str) -> Problem | None:
    """Find the first value PostgreSQL's jsonb cannot store, for a precise error message."""
    if isinstance(value, str):
        if "\x00" in value:
            return Problem(path, "NUL characters (\\u0000) cannot be stored; remove or escape them")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return Problem(path, "text is not valid Unicode (lone surrogate)")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return Problem(path, "NaN and Infinity are not valid JSON numbers")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return Problem(path, "object keys must be strings")
            problem = _locate_unstorable(key, f"{path}.{key}") or _locate_unstorable(
                item, f"{path}.{key}"
            )
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _locate_unstorable(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if value is None or isinstance(value, bool | int | float):
        return None
    return Problem(path, f"{type(value).__name__} is not a JSON value")


# One encoder for every call: json.dumps with options builds a new one each time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def to_storable_json(value: object, path: str) -> str:
    """Serialize value for a jsonb column, or raise InvalidEvents saying where it cannot be."""
    try:
        text = _ENCODER.encode(value)
        text.encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError, RecursionError):
        problem = _locate_unstorable(value, path) or Problem(path, "not a storable JSON value")
        raise InvalidEvents([problem]) from None
    if "\\u0000" in text:
        nul = _locate_unstorable(value, path)
        if nul:
            raise InvalidEvents([nul])
    return text


def _pydantic_problems(exc: ValidationError, prefix: str) -> list[Problem]:
    return [Problem(prefix + error_path(error), error["msg"]) for error in exc.errors()]


_AT = TypeAdapter(datetime)


# The bulk of a stream: bare text chunks. They get a shortcut that accepts exactly what the
# full check accepts and produces the same JSON, at a fraction of the cost.
_TEXT_FIELDS = {"text-delta": "delta", "reasoning": "text"}


def _plain_text_event(raw: dict[str, object]) -> CheckedEvent | None:
    kind = raw.get("kind")
    field = _TEXT_FIELDS.get(kind) if isinstance(kind, str) else None
    data = raw.get("data")
    seq = raw.get("seq")
    if field is None or type(data) is not dict or len(data) != 1 or raw.get("at") is not None:
        return None
    text = data.get(field)
    if type(text) is not str or type(seq) is not int or seq < 1 or "\x00" in text:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    data_json = f'{{"{field}":{_ENCODER.encode(text)}}}'
    return CheckedEvent(seq, str(kind), data, None, data_json)


def check_event(raw: object, index: int, depth_limit: int | None = None) -> CheckedEvent:
    """Validate one event envelope and its data against the vocabulary."""
    if type(raw) is dict and (plain := _plain_text_event(raw)) is not None:
        return plain
    where = f"events[{index}]"
    if not isinstance(raw, dict):
        raise InvalidEvents([Problem(where, "an event must be a JSON object")])
    problems: list[Problem] = []
    seq = raw.get("seq")
    if type(seq) is not int or seq < 1:
        problems.append(Problem(f"{where}.seq", "seq must be a positive integer"))
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        problems.append(Problem(f"{where}.kind", "kind must be a non-empty string"))
    elif len(kind) > MAX_KIND_LENGTH:
        problems.append(Problem(f"{where}.kind", f"kind is longer than {MAX_KIND_LENGTH}"))
    elif unstorable := _locate_unstorable(kind, f"{where}.kind"):
        # data-*/system.* kinds are open-ended, so the kind itself may hold a NUL.
        problems.append(unstorable)
    elif not is_known_kind(kind):
        problems.append(
            Problem(
                f"{where}.kind",
                f"unknown event kind {kind!r}; expected one of {', '.join(KINDS)},"
                " data-<name> or system.<name>",
            )
        )
    data = raw.get("data", {})
    at: datetime | None = None
    if raw.get("at") is not None:
        try:
            at = _AT.validate_python(raw["at"])
        except ValidationError:
            problems.append(Problem(f"{where}.at", "at must be an ISO 8601 timestamp"))
        else:
            reason = unstorable_reason(at)
            if reason is not None:
                problems.append(Problem(f"{where}.at", f"at {reason}"))
    depth_limit = max_json_depth() if depth_limit is None else depth_limit
    if nests_deeper_than(data, depth_limit):
        problems.append(Problem(f"{where}.data", f"data nests deeper than {depth_limit} levels"))
        raise InvalidEvents(problems)
    schema = DATA_SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is not None:
        if not isinstance(data, dict):
            problems.append(Problem(f"{where}.data", "data must be a JSON object"))
        else:
            try:
                schema.model_validate(data)
            except ValidationError as exc:
                problems.extend(_pydantic_problems(exc, f"{where}.data"))
    if problems:
        raise InvalidEvents(problems)
    assert isinstance(seq, int) and isinstance(kind, str)
    return CheckedEvent(seq, kind, data, at, to_storable_json(data, f"{where}.data"))


def check_events(raw_events: object) -> list[CheckedEvent]:
    """Validate a batch; every problem of every event is reported together."""
    if not isinstance(raw_events, list):
        raise InvalidEvents([Problem("events", "events must be a list")])
    checked: list[CheckedEvent] = []
    problems: list[Problem] = []
    previous: int | None = None
    depth_limit = max_json_depth()
    for index, raw in enumerate(raw_events):
        try:
            checked.append(check_event(raw, index, depth_limit))
        except InvalidEvents as exc:
            problems.extend(exc.problems)
        seq = raw.get("seq") if isinstance(raw, dict) else None
        if type(seq) is not int or seq < 1:
            previous = None
            continue
        if previous is not None and seq != previous + 1:
            problems.append(
                Problem(
                    f"events[{index}].seq",
                    f"seqs in a batch must be consecutive: expected {previous + 1}, got {seq}",
                )
            )
        previous = seq
    if problems:
        raise InvalidEvents(problems)
    return checked


# --- scrub rules: what redaction leaves of an event (an allow-list) ---------------------------
#
# Redaction keeps structure and nothing else: ids, seqs, kinds, roles, part types, timestamps,
# numeric token counts and finish reasons. An event's seq, kind and time are columns of their
# own; of its data, a field survives only when the kind's schema names it and it is one of the
# structural fields below, reduced by its rule. The fields a kind's schema requires get a
# placeholder, so a scrubbed event still validates; every scrubbed event says `redacted: true`,
# which the projector turns into the redaction marker. data-*, system.* and any kind without a
# schema keep `redacted: true` alone. The same rules reduce a redacted message's metadata, a
# run's usage and a run's error.

REDACTED_PARTS: list[JsonValue] = [{"type": "text", "text": REDACTION_TEXT}]


class _Dropped(Enum):
    """What a rule returns for a value that does not survive."""

    DROP = "drop"


_DROP = _Dropped.DROP
Kept = JsonValue | Literal[_Dropped.DROP]

# Finish reasons as the AI SDK, OpenAI, Anthropic, Gemini, Pydantic AI, ThreadProtocol and
# ChatGPT spell them; any other value is free text and becomes "other".
FINISH_REASONS = frozenset(
    {
        *("stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"),
        *("tool_calls", "content_filter", "function_call", "tool_call", "interrupted"),
        *("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"),
        "model_context_window_exceeded",
        "stopped",  # ours: a browser Stop kept the partial answer (ledger.stop_run)
        *("FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION"),
        *("LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"),
        *("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"),
    }
)


def _refusal_classes(base: type[DomainError]) -> list[type[DomainError]]:
    found = [base]
    for subclass in base.__subclasses__():
        found += _refusal_classes(subclass)
    return found


# The error codes this application writes itself (its refusals' codes, the class names the
# worker records, the lease reaper's, the importer's and the AI SDK adapter's): a redacted
# error keeps its code only when it is one of these, since a client's code is free text.
OWN_ERROR_CODES = frozenset(
    {cls.code for cls in _refusal_classes(DomainError)}
    | {cls.__name__ for cls in (*_refusal_classes(DomainError), GeneratorError)}
    | {"generator_crashed", "lease_expired", "imported", "abort"}
)


def _kept_string(value: JsonValue) -> Kept:
    return value if isinstance(value, str) else _DROP


def _kept_integer(value: JsonValue) -> Kept:
    return value if type(value) is int else _DROP


def _kept_role(value: JsonValue) -> Kept:
    return value if value in ROLES else _DROP


def _is_count(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def scrubbed_finish_reason(value: JsonValue) -> Kept:
    """A finish reason of a known vocabulary as it is, any other string as "other"."""
    if not isinstance(value, str):
        return _DROP
    return value if value in FINISH_REASONS else "other"


def scrubbed_usage(usage: object) -> JsonObject:
    """The token counts of a usage object: numbers under keys that name tokens, at any depth.

    A key counts tokens when it contains "token" in any case (`inputTokens`, `output_tokens`,
    `cache_read_input_tokens`, `promptTokenCount`, `inputTokenDetails.cacheReadTokens`);
    everything else (costs, provider names, lists, custom keys) is dropped.
    """
    if not isinstance(usage, dict):
        return {}
    kept: JsonObject = {}
    for key, value in usage.items():
        if "token" not in key.lower():
            continue
        if _is_count(value):
            kept[key] = value
        elif isinstance(value, dict) and (nested := scrubbed_usage(value)):
            kept[key] = nested
    return kept


def _kept_usage(value: JsonValue) -> Kept:
    return scrubbed_usage(value) or _DROP


def scrubbed_error_code(value: JsonValue) -> Kept:
    """An error code this application wrote; a client's code is dropped."""
    return value if isinstance(value, str) and value in OWN_ERROR_CODES else _DROP


Rule = Callable[[JsonValue], Kept]


def _kept(value: object, rules: dict[str, Rule]) -> JsonObject:
    """The fields of value that rules name, each reduced by its rule."""
    kept: JsonObject = {}
    if isinstance(value, dict):
        for name, rule in rules.items():
            if name in value and (reduced := rule(value[name])) is not _DROP:
                kept[name] = reduced
    return kept


def _list_of(rule: Callable[[JsonValue], JsonObject]) -> Rule:
    def reduce(value: JsonValue) -> Kept:
        return [rule(item) for item in value] if isinstance(value, list) else _DROP

    return reduce


def scrubbed_error(error: object) -> JsonObject:
    """An error object reduced to the marker and, when it is one of ours, its code."""
    return {"message": REDACTION_TEXT, **_kept(error, {"code": scrubbed_error_code})}


def _scrubbed_step(step: JsonValue) -> JsonObject:
    return _kept(
        step, {"seq": _kept_integer, "finishReason": scrubbed_finish_reason, "usage": _kept_usage}
    )


def _scrubbed_error_note(error: JsonValue) -> JsonObject:
    return {**_kept(error, {"seq": _kept_integer}), **scrubbed_error(error)}


def _scrubbed_annotation(note: JsonValue) -> JsonObject:
    return {**_kept(note, {"seq": _kept_integer, "kind": _kept_string}), "data": {"redacted": True}}


# What the projector writes into a message's metadata that is structure, and the ids a source
# gave the message; the rest (custom keys, a format's extras, model names) is dropped.
_METADATA_RULES: dict[str, Rule] = {
    "schemaVersion": _kept_integer,
    "sourceMessageId": _kept_string,
    "agentId": _kept_string,
    "finishReason": scrubbed_finish_reason,
    "usage": _kept_usage,
    "steps": _list_of(_scrubbed_step),
    "errors": _list_of(_scrubbed_error_note),
    "annotations": _list_of(_scrubbed_annotation),
}


def scrubbed_metadata(metadata: object) -> JsonObject:
    """A message's metadata reduced to its structure: what a redacted message keeps."""
    return _kept(metadata, _METADATA_RULES)


# The structural fields of event data, by name, and what each keeps.
_DATA_RULES: dict[str, Rule] = {
    "id": _kept_string,
    "messageId": _kept_string,
    "toolCallId": _kept_string,
    "agentId": _kept_string,
    "role": _kept_role,
    "createdAt": _kept_string,
    "finishReason": scrubbed_finish_reason,
    "usage": _kept_usage,
    "code": scrubbed_error_code,
    "metadata": scrubbed_metadata,
}
# What stands in for the content a kind's schema requires (or names, to say it was there).
_PLACEHOLDERS: dict[str, JsonObject] = {
    "text-delta": {"delta": ""},
    "reasoning": {"text": ""},
    "tool-call": {"toolName": REDACTION_TEXT, "input": None},
    "tool-result": {"output": None},
    "file": {"mimeType": "application/octet-stream", "url": "about:blank"},
    "error": {"message": REDACTION_TEXT},
    "message": {"parts": REDACTED_PARTS},
}
_KEPT_FIELDS: dict[str, dict[str, Rule]] = {
    kind: {name: _DATA_RULES[name] for name in schema.model_fields if name in _DATA_RULES}
    for kind, schema in DATA_SCHEMAS.items()
}


def scrubbed_data(kind: str, data: object) -> JsonObject:
    """The event data redaction leaves: `redacted: true`, the structure, placeholders."""
    return {
        "redacted": True,
        **_kept(data, _KEPT_FIELDS.get(kind, {})),
        **copy.deepcopy(_PLACEHOLDERS.get(kind, {})),
    }
