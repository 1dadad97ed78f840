"""What every convention reads the same way: token counts, tool calls given as name + JSON,
flat `tool_calls.<index>.<field>` attributes, provider role names and image URLs."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

from transcripts.formats.document import parse_json_text
from transcripts.formats.otlp.model import SpanData, SpanRejected

# (our usage key, the attributes that may hold it, first found wins)
UsageTable = Iterable[tuple[str, tuple[str, ...]]]
# The role names flat conventions (OpenLLMetry, OpenInference) use, as canonical roles.
ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}


def token_usage(attributes: Mapping[str, object], table: UsageTable) -> dict[str, int]:
    """The token counts a span names, under our usage keys (numbers only, booleans aside)."""
    usage: dict[str, int] = {}
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
    arguments: object,
    call_id: object,
    where: str,
    tool_names: dict[str, str],
    arguments_key: str = "arguments",
) -> dict[str, object]:
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


def flat_tool_calls(
    fields: Mapping[str, object],
    where: str,
    tool_names: dict[str, str],
    *,
    field: re.Pattern[str],
    suffix: str = "",
    name_key: str = "name",
    arguments_key: str = "arguments",
) -> list[dict[str, object]]:
    """The tool calls of a flat message as canonical tool-call parts, in index order.

    field matches a message field holding part of a call (`index` and `field` groups); a
    call's fields are read under name_key, arguments_key and `id`, and its errors are placed
    at `<where>.tool_calls.<index><suffix>`.
    """
    calls: dict[int, dict[str, object]] = {}
    for key, value in fields.items():
        match = field.match(key)
        if match is not None:
            calls.setdefault(int(match["index"]), {})[match["field"]] = value
    parts: list[dict[str, object]] = []
    for index in sorted(calls):
        call = calls[index]
        call_where = f"{where}.tool_calls.{index}{suffix}"
        name = call.get(name_key)
        if not isinstance(name, str) or not name:
            raise SpanRejected(f"{call_where}.{name_key}: expected a non-empty string")
        parts.append(
            tool_call_part(
                name=name,
                arguments=call.get(arguments_key),
                call_id=call.get("id"),
                where=call_where,
                tool_names=tool_names,
                arguments_key=arguments_key,
            )
        )
    return parts


def tool_output(parts: Iterable[Mapping[str, object]]) -> object:
    """What a tool message's text parts say the tool returned: one text as the JSON it holds
    (or the text), several joined."""
    texts = [str(part["text"]) for part in parts if part["type"] == "text"]
    return parse_json_text(texts[0]) if len(texts) == 1 else "".join(texts)


def mime_of(url: str) -> str:
    """The media type of an image URL: a data URL's own, else any image."""
    if url.startswith("data:") and ";" in url:
        return url[len("data:") : url.index(";")] or "application/octet-stream"
    return "image/*"


def first_string(attributes: Mapping[str, object], keys: tuple[str, ...]) -> str | None:
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
    attributes: Mapping[str, object], key: re.Pattern[str], sides: tuple[str, str]
) -> tuple[dict[int, dict[str, object]], dict[int, dict[str, object]]]:
    """Flat per-message attributes (`<side>.<index>.<field>` as key matches them) grouped by
    message index, for the input side and the output side."""
    grouped: dict[str, dict[int, dict[str, object]]] = {side: {} for side in sides}
    for name, value in attributes.items():
        match = key.match(name)
        if match is not None:
            grouped[match["side"]].setdefault(int(match["index"]), {})[match["field"]] = value
    return grouped[sides[0]], grouped[sides[1]]
