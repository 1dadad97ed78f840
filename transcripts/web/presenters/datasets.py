"""The datasets page's preview as a table: a preference row's prompt, chosen and rejected
answers, or a chat row's messages, each cell's messages as text, clipped when long."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transcripts.datasets.query import PREFERENCES

# A cell longer than this many characters (or messages) shows its start, and expands.
CLIP_CHARS = 160
CLIP_MESSAGES = 3
# The columns of each kind, and where each takes its messages from in each format's rows.
PREFERENCE_COLUMNS: tuple[str, ...] = ("Prompt", "Chosen", "Rejected")
CHAT_COLUMNS = ("Messages",)
_SOURCES: dict[str, tuple[tuple[str, ...], ...]] = {
    "trl": (("prompt",), ("chosen",), ("rejected",)),
    "openai-preferences": (("input", "messages"), ("preferred_output",), ("non_preferred_output",)),
    "chat": (("messages",),),
}


@dataclass(frozen=True)
class Said:
    """One message of a cell: who, and its text (tool calls and attachments in words)."""

    role: str
    text: str


@dataclass(frozen=True)
class Cell:
    """A column's messages, and the short text shown until it is expanded ('' when it fits)."""

    messages: list[Said]
    clipped: str


@dataclass(frozen=True)
class PreviewTable:
    """The headings and, per dataset row, its cells."""

    headings: tuple[str, ...]
    rows: list[list[Cell]]


def _content_text(content: Any) -> str:
    """A message's content as text: a string as it is, parts as their text or [kind]."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    pieces = []
    for part in content:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, Mapping):
            pieces.append(f"[{part.get('type') or 'part'}]")
    return "\n\n".join(pieces)


def _calls_text(calls: Any) -> list[str]:
    """Each tool call as `→ name(arguments)`."""
    lines = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            lines.append(f"→ {function.get('name') or 'tool'}({function.get('arguments') or ''})")
    return lines


def said(message: Any) -> Said:
    """One row message (OpenAI or Hugging Face shape) as role and text."""
    if not isinstance(message, Mapping):
        return Said("?", json.dumps(message, ensure_ascii=False))
    lines = [_content_text(message.get("content")), *_calls_text(message.get("tool_calls"))]
    return Said(str(message.get("role") or "?"), "\n".join(line for line in lines if line))


def cell(messages: Any) -> Cell:
    """A cell of messages, with its clipped start when it is long."""
    spoken = [said(m) for m in messages] if isinstance(messages, list) else []
    whole = " · ".join(f"{s.role}: {' '.join(s.text.split())}" for s in spoken)
    if len(whole) <= CLIP_CHARS and len(spoken) <= CLIP_MESSAGES:
        return Cell(spoken, "")
    return Cell(spoken, whole[: CLIP_CHARS - 1].rstrip() + "…")


def _dig(record: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """record[path[0]][path[1]]…, or None where a step is missing."""
    value: Any = record
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def preview_table(kind: str, fmt: str, records: Sequence[Mapping[str, Any]]) -> PreviewTable:
    """The preview rows of a dataset of kind in format fmt, as a table."""
    if kind == PREFERENCES:
        shape = "trl" if fmt == "trl" else "openai-preferences"
        headings, sources = PREFERENCE_COLUMNS, _SOURCES[shape]
    else:
        headings, sources = CHAT_COLUMNS, _SOURCES["chat"]
    rows = [[cell(_dig(record, path)) for path in sources] for record in records]
    return PreviewTable(headings, rows)
