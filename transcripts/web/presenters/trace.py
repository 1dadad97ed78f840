"""The run trace as the page shows it: bars on one time axis (SVG coordinates: the CSP forbids
inline styles), durations, tokens with human labels, costs from the price table, and the
content segments short or folded."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.safestring import SafeString

from transcripts.selectors.prices import price_for
from transcripts.selectors.trace import Segment, Span, Trace
from transcripts.web import rendering

AXIS_WIDTH = 1000  # the bars' SVG viewBox width
MIN_BAR_WIDTH = 4  # an instant (a tool that answered at once) still shows
SHORT_VALUE_CHARS = 120  # tool inputs/outputs up to this long show inline, open
SHORT_TEXT_CHARS = 600  # reasoning up to this long shows open
TICKS = 4


def cost_of(span: Span) -> float | None:
    """What the span's tokens cost at its model's price (None: no price or no tokens)."""
    price = price_for(span.model)
    if price is None or (span.input_tokens is None and span.output_tokens is None):
        return None
    return (
        (span.input_tokens or 0) * price.input + (span.output_tokens or 0) * price.output
    ) / 1_000_000


def cost_label(cost: float | None) -> str:
    """Dollars for people: $0.0042, $1.25; an unknown cost is a dash."""
    if cost is None:
        return "—"
    if cost == 0:
        return "$0"
    if cost < 0.01:  # two significant digits of a fraction of a cent
        return f"${cost:.{max(4, 1 - math.floor(math.log10(cost)))}f}"
    return f"${cost:,.2f}"


# --- labels ------------------------------------------------------------------------------

_USAGE_LABELS = {
    "inputTokens": "Input tokens",
    "outputTokens": "Output tokens",
    "totalTokens": "Total tokens",
    "reasoningTokens": "Reasoning tokens",
    "cachedInputTokens": "Cached input tokens",
    "prompt_tokens": "Input tokens",
    "completion_tokens": "Output tokens",
    "promptTokenCount": "Input tokens",
    "candidatesTokenCount": "Output tokens",
}
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def usage_label(key: str) -> str:
    """A usage key in words: inputTokens → "Input tokens", cache_read_tokens → "Cache read
    tokens"."""
    if key in _USAGE_LABELS:
        return _USAGE_LABELS[key]
    words = [w.lower() for w in _WORDS.findall(key)] or [key]
    return " ".join(words).capitalize()


def usage_rows(usage: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(label, value) of every count in a usage object; nested details are named after their
    group ("Input token details: cache read tokens")."""
    if not isinstance(usage, dict):
        return []
    rows: list[tuple[str, Any]] = []
    for key, value in usage.items():
        label = usage_label(key)
        label = f"{prefix}: {label[0].lower()}{label[1:]}" if prefix else label
        if isinstance(value, dict):
            rows += usage_rows(value, label)
        elif isinstance(value, int | float | str) and not isinstance(value, bool):
            rows.append((label, value))
    return rows


def duration_label(seconds: float | None) -> str:
    """340 ms, 1.24 s, 12.5 s, 2 min 5 s; never below 0 ms."""
    if seconds is None:
        return "—"
    seconds = max(seconds, 0.0)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


_SEGMENT_LABELS = {
    "text": "Text",
    "reasoning": "Reasoning",
    "tool-call": "Tool call",
    "tool-result": "Tool result",
    "file": "File",
    "error": "Error",
}
SPAN_LABELS = {"run": "Run", "llm": "LLM", "step": "Step", "tool": "Tool", "error": "Error"}

# --- the waterfall -----------------------------------------------------------------------


@dataclass
class SpanRow:
    """One row of the waterfall: a span and where its bar goes on the axis."""

    span: Span
    x: int
    width: int
    offset: str
    duration: str
    cost: float | None

    @property
    def cost_label(self) -> str:
        """The cost as shown."""
        return cost_label(self.cost)

    @property
    def kind_label(self) -> str:
        """The span's kind, in words."""
        return SPAN_LABELS.get(self.span.kind, self.span.kind)

    @property
    def depth(self) -> int:
        """The indentation class (deeper spans share the last one)."""
        return min(self.span.depth, 4)


@dataclass
class SegmentItem:
    """One piece of the readable content."""

    segment: Segment
    span_name: str
    offset: str
    text: str
    # Tool inputs and outputs, annotations: inline when short, else folded with their size.
    inline: str = ""
    folded: SafeString | None = None
    size: str = ""
    open: bool = True

    @property
    def label(self) -> str:
        """What the segment is, in words."""
        segment = self.segment
        if segment.kind == "message":
            return segment.role.capitalize()
        if segment.kind == "tool-result" and segment.is_error:
            return "Tool error"
        if segment.kind == "annotation":
            return "Data"
        return _SEGMENT_LABELS.get(segment.kind, segment.kind)


@dataclass
class TraceView:
    """The trace, laid out."""

    trace: Trace
    rows: list[SpanRow]
    items: list[SegmentItem]
    ticks: list[str]
    total_cost: float | None
    priced_all: bool

    @property
    def timed(self) -> bool:
        """Whether the events carry timing (else no bar, offset or duration is drawn)."""
        return self.trace.timed

    @property
    def total_cost_label(self) -> str:
        """The run's cost as shown."""
        return cost_label(self.total_cost)


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start).total_seconds()


def _offset_label(trace: Trace, moment: datetime | None) -> str:
    seconds = _seconds(trace.axis_start, moment) if trace.timed else None
    return "" if seconds is None else f"+{max(seconds, 0.0):.3f} s"


def _row(span: Span, trace: Trace, length: float) -> SpanRow:
    if not trace.timed:  # no bar at a made-up offset
        x, width = 0, 0
    elif length:
        start = _seconds(trace.axis_start, span.start) or 0.0
        x = round(start / length * AXIS_WIDTH)
        width = max(round((span.seconds or 0.0) / length * AXIS_WIDTH), MIN_BAR_WIDTH)
        x = max(min(x, AXIS_WIDTH - width), 0)
    else:  # everything happened at one instant (one batch of events)
        x, width = 0, AXIS_WIDTH if span.kind == "run" else MIN_BAR_WIDTH
    cost = cost_of(span) if span.kind in ("llm", "step") else None
    return SpanRow(
        span=span,
        x=x,
        width=width,
        offset=_offset_label(trace, span.start),
        duration=duration_label(span.seconds if trace.timed else None),
        cost=cost,
    )


def _value(item: SegmentItem, value: Any) -> None:
    text, is_json = rendering.pretty_text(value)
    if value is None:
        item.inline = "(nothing)"
    elif len(text) <= SHORT_VALUE_CHARS and "\n" not in text.strip():
        item.inline = text
    elif is_json and len(rendering.json_preview(value, SHORT_VALUE_CHARS + 1)) <= SHORT_VALUE_CHARS:
        item.inline = rendering.json_preview(value, SHORT_VALUE_CHARS)
    else:
        item.folded = rendering.render_pretty(text, is_json=is_json)
        item.size = f"{len(text):,} characters"
        item.open = False


def _item(segment: Segment, trace: Trace, names: dict[str, str]) -> SegmentItem:
    item = SegmentItem(
        segment=segment,
        span_name=names.get(segment.span_key, ""),
        offset=_offset_label(trace, segment.start),
        text=segment.text,
    )
    if segment.kind in ("tool-call", "tool-result", "annotation"):
        _value(item, segment.value)
    elif segment.kind == "file" and isinstance(segment.value, dict):
        item.inline = str(segment.value.get("mimeType") or "file")
    elif segment.kind == "reasoning":
        item.open = len(item.text) <= SHORT_TEXT_CHARS
        item.size = f"{len(item.text):,} characters"
    return item


def trace_view(trace: Trace) -> TraceView:
    """Bars, labels and costs of a trace."""
    length = _seconds(trace.axis_start, trace.axis_end) or 0.0
    rows = [_row(span, trace, length) for span in trace.spans]
    # A tool segment names its tool already; the others say which call they belong to.
    names = {span.key: span.name for span in trace.spans if span.kind != "tool"}
    priced = [
        row.cost
        for row in rows
        if row.span.kind in ("llm", "step")
        and (row.span.input_tokens is not None or row.span.output_tokens is not None)
    ]
    known = [cost for cost in priced if cost is not None]
    if known:
        total: float | None = sum(known)
    elif not priced:  # no step or LLM call with tokens: the run's own usage and model
        total = cost_of(trace.root)
    else:
        total = None
    rows[0].cost = total
    ticks = [duration_label(length * i / TICKS) if i else "0 s" for i in range(TICKS + 1)]
    if not trace.timed:
        ticks = []
    return TraceView(
        trace=trace,
        rows=rows,
        items=[_item(s, trace, names) for s in trace.segments],
        ticks=ticks,
        total_cost=total,
        priced_all=bool(priced) and len(known) == len(priced),
    )
