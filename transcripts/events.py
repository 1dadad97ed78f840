"""The event vocabulary: what may be appended to a run's log, checked before it is stored."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from transcripts.canonical import (
    FileFields,
    Message,
    MessageRole,
    ReasoningFields,
    ToolCallFields,
    ToolResultFields,
    WireModel,
    error_path,
)
from transcripts.errors import InvalidEvents, Problem
from transcripts.projector import REDACTION_TEXT
from transcripts.times import unstorable_reason

# Data schemas per kind. Extra fields are kept in the stored event; the projector ignores
# them. The kinds that carry one part's content share its fields with the part schema.


class MessageStart(WireModel):
    """Opens a message of the given role; content events after it go into it."""

    role: MessageRole
    messageId: str | None = None
    agentId: str | None = None
    metadata: dict[str, Any] | None = None


class TextDelta(WireModel):
    """A chunk of text, appended to the open message's text."""

    delta: str


class StepStarted(WireModel):
    """A model step begins."""


class StepFinished(WireModel):
    """A model step ends, with its finish reason and token usage."""

    finishReason: str | None = None
    usage: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class CheckedEvent:
    """An event that passed validation, with its JSON text ready for storage."""

    seq: int
    kind: str
    data: Any
    at: datetime | None
    data_json: str


def max_json_depth() -> int:
    """How deeply stored JSON may nest (deeper data breaks recursive readers later)."""
    from django.conf import settings

    return int(getattr(settings, "TRANSCRIPTS_MAX_JSON_DEPTH", 64))


_CONTAINERS = (dict, list)


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether value (parsed JSON) has containers nested more than limit levels deep."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(limit):
        if not level:
            return False
        level = [
            child
            for item in level
            for child in (item.values() if type(item) is dict else item)
            if isinstance(child, _CONTAINERS)
        ]
    return bool(level)


def _locate_unstorable(value: Any, path: str) -> Problem | None:
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


def to_storable_json(value: Any, path: str) -> str:
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


def _plain_text_event(raw: dict[str, Any]) -> CheckedEvent | None:
    field = _TEXT_FIELDS.get(raw.get("kind"))  # type: ignore[arg-type]
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
    return CheckedEvent(seq, raw["kind"], data, None, data_json)


def check_event(raw: Any, index: int, depth_limit: int | None = None) -> CheckedEvent:
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


def check_events(raw_events: Any) -> list[CheckedEvent]:
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


# --- scrub rules (what redaction leaves of an event) ---

REDACTED_PARTS = [{"type": "text", "text": REDACTION_TEXT}]


def scrubbed_data(kind: str, data: Any) -> Any:
    """The event data with its content removed; still a valid event of the same kind."""
    if not isinstance(data, dict):
        return {"redacted": True}
    keep = {"redacted": True}
    if kind == "text-delta":
        return {**keep, "delta": ""}
    if kind == "reasoning":
        return {**keep, "text": ""}
    if kind == "tool-call":
        return {
            **keep,
            "toolCallId": data.get("toolCallId"),
            "toolName": data.get("toolName"),
            "input": None,
        }
    if kind == "tool-result":
        return {
            **keep,
            "toolCallId": data.get("toolCallId"),
            "toolName": data.get("toolName"),
            "output": None,
            "isError": bool(data.get("isError", False)),
        }
    if kind == "file":
        return {**keep, "mimeType": data.get("mimeType"), "url": "about:blank"}
    if kind == "message":
        return {**keep, "role": data.get("role"), "parts": REDACTED_PARTS, "id": data.get("id")}
    if kind == "message-start":
        return {**keep, "role": data.get("role"), "messageId": data.get("messageId")}
    if kind == "error":
        return {**keep, "message": REDACTION_TEXT}
    if kind in ("step-started", "step-finished", "message-end"):
        return data
    return keep
