"""Message cards: parts rendered, tool results joined to their calls, usage and metadata.

The conversation, the live block of a run and the compare columns all show messages this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString

from transcripts.models import Message, Run, Thread
from transcripts.web import rendering

_EMPTY = SafeString("")


@dataclass
class PartView:
    """One part of a message, ready for the template."""

    type: str
    html: SafeString = _EMPTY
    text: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    is_error: bool = False
    input: Any = None  # a tool call's arguments, as stored (compared across branches)
    input_html: SafeString = _EMPTY
    output: Any = None  # a tool result's output, as stored
    output_html: SafeString = _EMPTY
    result: PartView | None = None
    joined: bool = False  # a tool result shown with its call
    url: str = ""
    preview_url: str = ""
    name: str = ""
    mime_type: str = ""


@dataclass
class Switcher:
    """The previous / i of n / next control of a message that has siblings."""

    index: int
    total: int
    previous_id: str | None
    next_id: str | None
    active_id: str | None
    active_index: int | None
    compare_url: str = ""


@dataclass
class MessageItem:
    """A message with everything its card shows."""

    message: Message
    parts: list[PartView]
    agent: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = ""
    hidden: bool = False
    flagged: bool = False
    redacted: bool = False
    errors: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)
    copy_text: str = ""  # the message's text parts (also what compare diffs)
    switcher: Switcher | None = None


def text_of(value: Any) -> str:
    """value when it is a string, else ''."""
    return value if isinstance(value, str) else ""


def usage_number(usage: Any, *keys: str) -> int | None:
    """The first integer among keys of a usage dict (providers spell them differently)."""
    if not isinstance(usage, dict):
        return None
    for key in keys:
        if isinstance(usage.get(key), int):
            return int(usage[key])
    return None


def input_tokens(usage: Any) -> int | None:
    """Input tokens of a usage dict."""
    return usage_number(usage, "inputTokens", "input_tokens")


def output_tokens(usage: Any) -> int | None:
    """Output tokens of a usage dict."""
    return usage_number(usage, "outputTokens", "output_tokens")


def short(value: Any) -> str:
    """An error or annotation in one line: its message (or type, kind, name), else its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "type", "kind", "name"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return rendering.json_preview(value, 120)


def part_view(part: Any) -> PartView:
    """One stored part, rendered for the template by its type."""
    if not isinstance(part, dict):
        return PartView(type="unknown", html=rendering.pretty_json(part))
    kind = text_of(part.get("type"))
    if kind in ("text", "reasoning"):
        text = text_of(part.get("text"))
        return PartView(type=kind, text=text, html=rendering.render_markdown(text))
    if kind == "tool-call":
        return PartView(
            type="tool-call",
            tool_name=text_of(part.get("toolName")) or "tool",
            tool_call_id=text_of(part.get("toolCallId")),
            input=part.get("input"),
            input_html=rendering.pretty_json(part.get("input")),
        )
    if kind == "tool-result":
        return PartView(
            type="tool-result",
            tool_name=text_of(part.get("toolName")),
            tool_call_id=text_of(part.get("toolCallId")),
            is_error=bool(part.get("isError")),
            output=part.get("output"),
            output_html=rendering.pretty_json(part.get("output")),
        )
    if kind == "file":
        url = text_of(part.get("url"))
        mime_type = text_of(part.get("mimeType"))
        return PartView(
            type="file",
            url=url.strip() if rendering.is_http_url(url) else "",
            preview_url=rendering.image_preview_url(url, mime_type) or "",
            name=text_of(part.get("name")) or text_of(part.get("filename")) or "file",
            mime_type=mime_type,
        )
    return PartView(type="unknown", tool_name=kind, html=rendering.pretty_json(part))


def _switcher(message: Message, group: list[tuple[str, bool]] | None) -> Switcher | None:
    if not group:
        return None
    ids = [i for i, _ in group]
    index = ids.index(message.id)
    return Switcher(
        index=index + 1,
        total=len(ids),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        active_id=next((i for i, active in group if active), None),
        active_index=next((n + 1 for n, (_, active) in enumerate(group) if active), None),
        # The alternatives fork at the parent ("root" when they are first messages).
        compare_url=reverse("compare", args=[message.thread_id, message.parent_id or "root"]),
    )


def message_items(
    thread: Thread,
    messages: Sequence[Message],
    *,
    siblings: Mapping[str, list[tuple[str, bool]]] | None = None,
) -> list[MessageItem]:
    """Cards for messages in order, tool results joined to their calls.

    siblings (from selectors.siblings_of) gives messages with alternatives their switcher.
    Each message's `run` should be loaded already: its model is shown when the message has none.
    """
    agents = thread.agents if isinstance(thread.agents, dict) else {}
    items: list[MessageItem] = []
    calls: dict[str, PartView] = {}
    for message in messages:
        meta = message.metadata if isinstance(message.metadata, dict) else {}
        parts = [part_view(p) for p in (message.parts if isinstance(message.parts, list) else [])]
        for part in parts:
            if part.type == "tool-call" and part.tool_call_id:
                calls[part.tool_call_id] = part
            elif part.type == "tool-result" and part.tool_call_id in calls:
                call = calls[part.tool_call_id]
                if call.result is None:
                    call.result = part
                    part.joined = True
                    part.tool_name = part.tool_name or call.tool_name
        agent_id = text_of(meta.get("agentId"))
        agent = agents.get(agent_id) if agent_id else None
        usage = meta.get("usage")
        errors = meta.get("errors")
        annotations = meta.get("annotations")
        items.append(
            MessageItem(
                message=message,
                parts=parts,
                agent=(text_of(agent.get("agent_name")) if isinstance(agent, dict) else "")
                or agent_id,
                model=text_of(meta.get("model")) or message.run.model,
                input_tokens=input_tokens(usage),
                output_tokens=output_tokens(usage),
                finish_reason=text_of(meta.get("finishReason")),
                hidden=meta.get("hidden") is True,
                flagged=bool(meta.get("flagged") or message.flagged_at),
                redacted=bool(meta.get("redacted") or message.redacted_at),
                errors=[short(e) for e in errors] if isinstance(errors, list) else [],
                annotations=[short(a) for a in annotations]
                if isinstance(annotations, list)
                else [],
                copy_text="\n\n".join(p.text for p in parts if p.type == "text"),
                switcher=_switcher(message, (siblings or {}).get(message.id)),
            )
        )
    return items


def projected_messages(
    thread: Thread, run: Run, projected: Sequence[Mapping[str, Any]]
) -> list[Message]:
    """Unsaved rows of a run's projected messages, shown like committed ones."""
    return [
        Message.from_projection(message, thread=thread, run=run, depth=position, position=position)
        for position, message in enumerate(projected)
    ]
