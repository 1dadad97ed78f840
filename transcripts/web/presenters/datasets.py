"""The datasets page's preview as a table: a preference row's prompt, chosen and rejected
answers, or a chat row's messages, each cell's messages as text, clipped when long, and a
link to where the row comes from (its fork point's Compare, or its branch)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

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

# The metadata keys naming a row's thread, fork point (preferences) and leaf (chat).
_SOURCE_KEYS = ("threadId", "forkMessageId", "leafMessageId")


@dataclass(frozen=True)
class Said:
    """One message of a cell: who, and its text (tool calls and attachments in words)."""

    role: str
    text: str


@dataclass(frozen=True)
class Cell:
    """A column's messages, the short text shown until it is expanded ('' when it fits), and
    its column's heading (a phone shows it above the cell, the table stacked)."""

    messages: list[Said]
    clipped: str
    heading: str = ""


@dataclass(frozen=True)
class PreviewRow:
    """A dataset row's cells, and where it comes from ('' when its row has no metadata)."""

    cells: list[Cell]
    source: str = ""
    source_label: str = ""


@dataclass(frozen=True)
class PreviewTable:
    """The headings and the rows."""

    headings: tuple[str, ...]
    rows: list[PreviewRow]


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


def cell(messages: Any, heading: str = "") -> Cell:
    """A cell of messages under heading, with its clipped start when it is long."""
    spoken = [said(m) for m in messages] if isinstance(messages, list) else []
    whole = " · ".join(f"{s.role}: {' '.join(s.text.split())}" for s in spoken)
    if len(whole) <= CLIP_CHARS and len(spoken) <= CLIP_MESSAGES:
        return Cell(spoken, "", heading)
    return Cell(spoken, whole[: CLIP_CHARS - 1].rstrip() + "…", heading)


def _dig(record: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """record[path[0]][path[1]]…, or None where a step is missing."""
    value: Any = record
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _source(record: Mapping[str, Any]) -> tuple[str, str]:
    """The page a row comes from, and its link's words: the Compare view of a preference
    row's fork point, the branch of a chat row; ('', '') without the row's metadata."""
    thread, fork, leaf = (_dig(record, ("metadata", key)) for key in _SOURCE_KEYS)
    if not isinstance(thread, str):
        return "", ""
    if isinstance(fork, str):
        return reverse("compare", args=[thread, fork]), "Compare"
    if isinstance(leaf, str):
        return f"{reverse('conversation', args=[thread])}?leaf={leaf}#m-{leaf}", "Thread"
    return "", ""


def preview_table(kind: str, fmt: str, records: Sequence[Mapping[str, Any]]) -> PreviewTable:
    """The preview rows of a dataset of kind in format fmt, as a table."""
    if kind == PREFERENCES:
        shape = "trl" if fmt == "trl" else "openai-preferences"
        headings, sources = PREFERENCE_COLUMNS, _SOURCES[shape]
    else:
        headings, sources = CHAT_COLUMNS, _SOURCES["chat"]
    rows = [
        PreviewRow(
            [cell(_dig(record, path), h) for h, path in zip(headings, sources, strict=True)],
            *_source(record),
        )
        for record in records
    ]
    return PreviewTable(headings, rows)
