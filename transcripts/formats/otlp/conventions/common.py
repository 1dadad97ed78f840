"""What every convention reads the same way: token counts and tool calls given as name + JSON."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from transcripts.formats.document import parse_json_text
from transcripts.formats.otlp.model import SpanData, SpanRejected

# (our usage key, the attributes that may hold it, first found wins)
UsageTable = Iterable[tuple[str, tuple[str, ...]]]


def token_usage(attributes: Mapping[str, Any], table: UsageTable) -> dict[str, Any]:
    """The token counts a span names, under our usage keys (numbers only, booleans aside)."""
    usage: dict[str, Any] = {}
    for name, keys in table:
        for key in keys:
            value = attributes.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                usage[name] = int(value)
                break
    return usage


def derived_call_id(name: str, arguments: str | None) -> str:
    """An id for a call sent without one, the same wherever the same call is repeated."""
    digest = hashlib.sha256(f"{name}\n{arguments or ''}".encode()).hexdigest()[:16]
    return f"call-{digest}"


def tool_call_part(
    *,
    name: str,
    arguments: Any,
    call_id: Any,
    where: str,
    tool_names: dict[str, str],
    arguments_key: str = "arguments",
) -> dict[str, Any]:
    """A canonical tool-call part from a name, JSON arguments text and an optional id."""
    if arguments is not None and not isinstance(arguments, str):
        raise SpanRejected(f"{where}.{arguments_key}: expected a JSON string")
    if call_id is None:
        call_id = derived_call_id(name, arguments)
    if not isinstance(call_id, str) or not call_id:
        raise SpanRejected(f"{where}.id: expected a non-empty string")
    tool_names[call_id] = name
    tool_input = parse_json_text(arguments) if arguments else None
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": tool_input}


def first_string(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first non-empty string among the attributes named by keys."""
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def span_error(span: SpanData) -> str | None:
    """Why the span failed (OTLP status ERROR), None when it did not."""
    return (span.status_message or "error") if span.status_code == 2 else None


def indexed(
    attributes: Mapping[str, Any], key: re.Pattern[str], sides: tuple[str, str]
) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """Flat per-message attributes (`<side>.<index>.<field>` as key matches them) grouped by
    message index, for the input side and the output side."""
    grouped: dict[str, dict[int, dict[str, Any]]] = {side: {} for side in sides}
    for name, value in attributes.items():
        match = key.match(name)
        if match is not None:
            grouped[match["side"]].setdefault(int(match["index"]), {})[match["field"]] = value
    return grouped[sides[0]], grouped[sides[1]]
