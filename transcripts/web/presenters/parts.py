"""One part of a message, ready for the template: text, reasoning, a tool call or result (its
input or output pretty-printed, folded with its size when long), a file (inline raster images
shown up to a size, remote images as a placeholder until the reader asks, pointers to files
kept elsewhere named) or data as key/value lists."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from transcripts.web import rendering

_EMPTY = SafeString("")
# Tool inputs and outputs up to this size are shown open; longer ones fold, with their size.
FOLD_CHARS = 600
FOLD_LINES = 12


@dataclass
class Payload:
    """A tool input or output as shown: its HTML, and whether it is long enough to fold."""

    html: SafeString
    folded: bool = False
    size: str = ""  # "14 KB"
    lines: int = 1
    empty: bool = False  # null or "": nothing to show


@dataclass
class DataView:
    """A `data-*`/`system.*` annotation (or a part of an unknown type) as key/value lists."""

    kind: str
    html: SafeString
    size: str = ""  # set when long enough to fold

    @property
    def label(self) -> str:
        """What it is: system (a `system.*` kind) or data."""
        return "system" if self.kind.startswith("system.") else "data"


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
    input_payload: Payload | None = None
    output: Any = None  # a tool result's output, as stored
    output_html: SafeString = _EMPTY
    output_payload: Payload | None = None
    results: list[PartView] = field(default_factory=list)  # a call's results in view
    joined: bool = False  # a tool result shown with its call
    url: str = ""
    preview_url: str = ""  # an inline (data:) image shown as it is
    name: str = ""
    mime_type: str = ""
    unavailable: str = ""  # why a file is not shown or linked
    reference: str = ""  # where a file not in the transcript lives (file-service://…)
    data: DataView | None = None

    @property
    def result(self) -> PartView | None:
        """A call's first result in view."""
        return self.results[0] if self.results else None

    @property
    def failed(self) -> bool:
        """Whether a call has a result that is an error."""
        return any(result.is_error for result in self.results)

    @property
    def shown_results(self) -> list[PartView]:
        """A call's results that have something to show (all of them when none has)."""
        shown = [r for r in self.results if r.output_payload and not r.output_payload.empty]
        return shown or self.results[:1]


def text_of(value: Any) -> str:
    """value when it is a string, else ''."""
    return value if isinstance(value, str) else ""


def payload(value: Any) -> Payload:
    """A tool input or output: pretty-printed, folded with its size when long.

    An object holding multi-line text (code to run, a page, a patch) is shown as key/value
    lists instead, so that the text keeps its lines rather than reading as escaped "\\n".
    """
    text, is_json = rendering.pretty_text(value)
    lines = text.count("\n") + 1
    html = rendering.render_pretty(text, is_json=is_json)
    parsed = rendering.parse_json_string(value)
    if isinstance(parsed, dict) and any(
        isinstance(v, str) and "\n" in v.strip() for v in parsed.values()
    ):
        lines += sum(v.count("\n") for v in parsed.values() if isinstance(v, str))
        html = rendering.data_view(parsed, clip=False)
    folded = len(text) > FOLD_CHARS or lines > FOLD_LINES
    return Payload(
        html=html,
        folded=folded,
        size=rendering.size_label(len(text.encode())) if folded else "",
        lines=lines,
        empty=value is None or value == "",
    )


def data_view(kind: str, value: Any) -> DataView:
    """Data under a kind as key/value lists, folded with its size when long."""
    compact = rendering.json_preview(value, sys.maxsize)
    long = len(compact) > FOLD_CHARS
    return DataView(
        kind=kind or "data",
        html=rendering.data_view(value),
        size=rendering.size_label(len(compact.encode())) if long else "",
    )


def annotation_view(note: Any) -> DataView:
    """A `data-*`/`system.*` event kept on a message ({seq, kind, data} or {action_type, data})."""
    if not isinstance(note, dict):
        return data_view("annotation", note)
    kind = next(
        (text_of(note.get(k)) for k in ("kind", "action_type", "type") if text_of(note.get(k))),
        "annotation",
    )
    if "data" in note:
        return data_view(kind, note["data"])
    rest = {k: v for k, v in note.items() if k not in ("seq", "kind", "action_type", "type")}
    return data_view(kind, rest)


def _file_view(part: dict[str, Any]) -> PartView:
    url = text_of(part.get("url")).strip()
    mime_type = text_of(part.get("mimeType"))
    is_image = mime_type.startswith("image/")
    name = text_of(part.get("name")) or text_of(part.get("filename"))
    view = PartView(
        type="file",
        url=url if rendering.is_http_url(url) else "",
        preview_url=rendering.inline_image_url(url) or "",
        name=name or ("image" if is_image else "file"),
        mime_type=mime_type,
    )
    remote = rendering.remote_image(url) if is_image else None
    if remote is not None:
        # Shown as a placeholder: the browser fetches it only when the reader asks.
        view.html = rendering.remote_image_html(remote, view.name)
    if view.preview_url or view.url:
        return view
    inline = rendering.inline_data(url)
    if inline is not None:
        size = rendering.size_label(inline.size)
        too_big = inline.size > rendering.MAX_INLINE_IMAGE_BYTES
        view.unavailable = (
            f"inline, {size}: too large to show here"
            if too_big
            else f"inline {inline.mime_type}, {size}: not shown"
        )
    elif url:
        # An export's pointer to a file kept elsewhere (ChatGPT's file-service://…).
        view.unavailable = "not included in this transcript"
        view.reference = url[:200]
    return view


def part_view(part: Any) -> PartView:
    """One stored part, rendered for the template by its type."""
    if not isinstance(part, dict):
        data = data_view("part", part)
        return PartView(type="unknown", tool_name="part", html=data.html, data=data)
    kind = text_of(part.get("type"))
    if kind in ("text", "reasoning"):
        text = text_of(part.get("text"))
        return PartView(type=kind, text=text, html=rendering.render_markdown(text))
    if kind == "tool-call":
        shown = payload(part.get("input"))
        return PartView(
            type="tool-call",
            tool_name=text_of(part.get("toolName")) or "tool",
            tool_call_id=text_of(part.get("toolCallId")),
            input=part.get("input"),
            input_html=shown.html,
            input_payload=shown,
        )
    if kind == "tool-result":
        shown = payload(part.get("output"))
        return PartView(
            type="tool-result",
            tool_name=text_of(part.get("toolName")),
            tool_call_id=text_of(part.get("toolCallId")),
            is_error=bool(part.get("isError")),
            output=part.get("output"),
            output_html=shown.html,
            output_payload=shown,
        )
    if kind == "file":
        return _file_view(part)
    data = data_view(kind, {k: v for k, v in part.items() if k != "type"})
    return PartView(type="unknown", tool_name=kind or "part", html=data.html, data=data)
