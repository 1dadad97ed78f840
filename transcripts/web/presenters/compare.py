"""Branches side by side: a column per run, its message cards, word diffs, tool and metric
differences against the first column."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from transcripts import selectors
from transcripts.jsonvalue import input_tokens, output_tokens
from transcripts.models import Message, Run, RunRating, RunStatus, Thread
from transcripts.selectors.score_views import BranchJudgement, branch_judgement
from transcripts.selectors.trace import carries_timing
from transcripts.web.presenters.compare_text import SIMILARITY_FLOOR, rendered_text, word_diff
from transcripts.web.presenters.judgement import ScoreLine, score_lines
from transcripts.web.presenters.messages import (
    MessageItem,
    PartView,
    message_items,
    projected_messages,
    restore_label,
)
from transcripts.web.presenters.runs import NO_TIMING, clamp_note, elapsed

MAX_COLUMNS = 10
NO_VALUE = "\N{EN DASH}"
ROOT = "root"  # the fork point of the runs that start a new root
# What a column's badge says for runs that never became a branch (no stored messages).
UNMATERIALIZED_LABELS: dict[str, str] = {RunStatus.CANCELLED: "stopped"}

# Column order after the leading branch: superseded, other committed, live, failed, then
# cancelled (newest first within each).
RANK: dict[str, int] = {
    RunStatus.SUPERSEDED: 1,
    RunStatus.COMMITTED: 2,
    RunStatus.STREAMING: 3,
    RunStatus.QUEUED: 3,
    RunStatus.FAILED: 4,
    RunStatus.CANCELLED: 5,
}


def compare_url(run: Run) -> str:
    """The compare page of the fork point the run branches from."""
    return reverse("compare", args=[run.thread_id, run.fork_from_id or ROOT])


def pair_url(a: Run, b: Run) -> str:
    """The page that compares two runs."""
    return f"{reverse('compare_runs')}?a={a.id}&b={b.id}"


# --- what a column shows ---------------------------------------------------------------


@dataclass
class PartItem:
    """A part of a card; a text part may carry the word diff of its message's text."""

    part: PartView
    diff: SafeString | None = None
    in_diff: bool = True  # later text parts are shown within the first one's diff
    tool_status: str = ""  # "same", "args", "output", "both" or "new"


@dataclass
class ToolUse:
    """A tool call with its result (or a result without its call), for comparing."""

    key: tuple[str, int]
    input: Any
    output: Any = None
    is_error: bool = False
    has_result: bool = False
    item: PartItem | None = None


@dataclass
class Card:
    """A message of a column: its card as the conversation shows it, and how it compares."""

    item: MessageItem
    key: tuple[str, bool, int]  # role, has text, rank among the column's messages like it
    parts: list[PartItem]
    text: str = ""  # what a reader sees of its text parts (rendered), which the diff compares
    similarity: int | None = None  # percent of the text shared with the first column
    new: bool = False  # no counterpart in the first column
    too_different: bool = False  # under SIMILARITY_FLOOR: shown as is, without marks

    @property
    def diffed(self) -> bool:
        """Whether its first text part shows the diff (which then holds the later ones)."""
        return any(item.diff is not None for item in self.parts)

    @property
    def state(self) -> str:
        """The branch state of a stored message (active, alternative); "" for a projection."""
        if self.item.message.run.status not in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
            return ""
        return "active" if self.item.message.active else "alternative"


@dataclass
class Metric:
    """One cell of the metrics rows."""

    label: str
    value: str
    raw: Any = None
    delta: str = ""
    differs: bool = False
    note: str = ""  # why a time shows as 0: it came out below 0


@dataclass
class Column:
    """One branch: its run, its messages and how they differ from the first column."""

    run: Run
    kind: str
    cards: list[Card]
    tools: list[ToolUse]
    metrics: list[Metric]
    open_url: str
    materialized: bool  # messages stored as rows (else a projection of the run's events)
    ratings: list[RunRating] = field(default_factory=list)
    mine: RunRating | None = None
    missing: list[str] = field(default_factory=list)
    number: int = 0
    # Its scores and feedback counts (issue 28): its own run's and messages' only.
    judgement: BranchJudgement = field(default_factory=BranchJudgement)

    @property
    def score_lines(self) -> list[ScoreLine]:
        """The branch's scores in words."""
        return score_lines(self.judgement.scores)

    @property
    def preferred(self) -> list[RunRating]:
        """The ratings that mark this run preferred."""
        return [r for r in self.ratings if r.preferred]

    @property
    def notes(self) -> list[RunRating]:
        """The ratings that carry a note."""
        return [r for r in self.ratings if r.note]

    @property
    def active(self) -> bool:
        """Whether the whole branch shown is on the thread's active path."""
        return self.kind == "active"

    @property
    def label(self) -> str:
        """The column's badge: its branch state, or what became of a run without messages."""
        return UNMATERIALIZED_LABELS.get(self.kind, self.kind)

    @property
    def stopped(self) -> bool:
        """Whether its answer was stopped before its end (a branch kept from a Stop)."""
        return any(card.item.finish_reason == "stopped" for card in self.cards)

    @property
    def restorable(self) -> bool:
        """Whether Restore applies: every stored alternative, whatever its run's status."""
        return self.materialized and bool(self.cards) and not self.active

    @property
    def restore_label(self) -> str:
        """What Restore does, said for the column's last message."""
        return restore_label(self.cards[-1].item.message.role if self.cards else "assistant")

    @property
    def rateable(self) -> bool:
        """Whether the run is finished, so that it can be rated."""
        return not self.run.is_open


def _cards(items: list[MessageItem]) -> tuple[list[Card], list[ToolUse]]:
    """Cards of a column and its tool uses, each use keyed by tool name and occurrence."""
    cards: list[Card] = []
    tools: list[ToolUse] = []
    calls: dict[str, ToolUse] = {}
    seen_roles: dict[tuple[str, bool], int] = {}
    seen_tools: dict[str, int] = {}

    def tool_key(name: str) -> tuple[str, int]:
        seen_tools[name] = seen_tools.get(name, 0) + 1
        return (name, seen_tools[name])

    for item in items:
        parts: list[PartItem] = []
        has_text = False
        for view in item.parts:
            part = PartItem(view)
            parts.append(part)
            if view.type == "text":
                part.in_diff = not has_text
                has_text = True
            elif view.type == "tool-call":
                use = ToolUse(key=tool_key(view.tool_name), input=view.input, item=part)
                tools.append(use)
                if view.tool_call_id:
                    calls[view.tool_call_id] = use
            elif view.type == "tool-result":
                # message_items joined the result to its call, as the conversation shows it.
                if view.joined:
                    use = calls[view.tool_call_id]
                else:
                    name = f"result of {view.tool_name or 'tool'}"
                    use = ToolUse(key=tool_key(name), input=None, item=part)
                    tools.append(use)
                use.output = view.output
                use.is_error = view.is_error
                use.has_result = True
        # Messages pair up by role among those with text (answers) and those without (calls).
        kind = (item.message.role, has_text)
        seen_roles[kind] = seen_roles.get(kind, 0) + 1
        text = "\n\n".join(rendered_text(p.html) for p in item.parts if p.type == "text")
        cards.append(Card(item=item, key=(*kind, seen_roles[kind]), parts=parts, text=text))
    return cards, tools


# --- differences -------------------------------------------------------------------------


def _same_tool(a: ToolUse, b: ToolUse) -> str:
    """How a tool use differs from its counterpart: "same", "args", "output" or "both"."""
    args = a.input != b.input
    output = (a.has_result, a.output, a.is_error) != (b.has_result, b.output, b.is_error)
    return "both" if args and output else "args" if args else "output" if output else "same"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _compare(column: Column, first: Column) -> None:
    """Mark column's differences from the first column: texts, tool uses, metrics."""
    counterparts = {card.key: card for card in first.cards}
    for card in column.cards:
        other = counterparts.pop(card.key, None)
        card.new = other is None
        # A message without counterpart is new as a whole: the "new" tag says it, not marks.
        if other is None or (not card.text and not other.text):
            continue
        diff, ratio = word_diff(other.text, card.text)
        card.similarity = round(ratio * 100)
        card.too_different = card.similarity < SIMILARITY_FLOOR
        if card.too_different:
            continue
        for item in card.parts:
            if item.part.type == "text" and item.in_diff:
                item.diff = diff
                break
    missing: dict[str, int] = {}
    for role, _, _ in counterparts:
        missing[role] = missing.get(role, 0) + 1
    column.missing = [_plural(n, f"{role} message") for role, n in missing.items()]
    tools = {use.key: use for use in first.tools}
    for use in column.tools:
        other_use = tools.pop(use.key, None)
        if use.item is not None:
            use.item.tool_status = "new" if other_use is None else _same_tool(use, other_use)
    column.missing += [f"{name} call" for name, _ in tools]
    for metric, base in zip(column.metrics, first.metrics, strict=True):
        metric.differs = metric.value != base.value
        if (
            metric.differs
            and isinstance(metric.raw, int | float)
            and isinstance(base.raw, int | float)
        ):
            change = metric.raw - base.raw
            if isinstance(change, float):
                sign = "+" if change >= 0 else "-"
                # Values that differ by less than the shown precision: not "+0 ms".
                metric.delta = sign + ("<1 ms" if abs(change) < 0.0005 else _duration(abs(change)))
            else:
                metric.delta = f"{change:+d}"


# --- metrics -----------------------------------------------------------------------------


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return NO_VALUE
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def _tokens(cards: list[Card], usage: Any) -> tuple[int | None, int | None]:
    """Run usage, else the sum of the messages' usage."""
    if isinstance(usage, dict) and usage:
        return input_tokens(usage), output_tokens(usage)
    inputs = [c.item.input_tokens for c in cards if c.item.input_tokens is not None]
    outputs = [c.item.output_tokens for c in cards if c.item.output_tokens is not None]
    return (sum(inputs) if inputs else None, sum(outputs) if outputs else None)


def _timings(run: Run) -> list[Metric]:
    """First token and duration, never below 0 (a continued answer's copied text comes before
    its run starts: flagged), or "no timing recorded" when the run started, had its first
    event and finished at one instant (an import without timestamps)."""
    start = run.started_at or run.created_at
    end = run.finished_at or (timezone.now() if run.is_open else None)
    moments = [t for t in (start, run.first_event_at, end) if t is not None]
    if moments and not carries_timing(min(moments), max(moments)):
        return [Metric("First token", NO_TIMING), Metric("Duration", NO_TIMING)]
    ttft, early = elapsed(start, run.first_event_at)
    duration, skewed = elapsed(start, end)
    return [
        Metric("First token", _duration(ttft), ttft, note=clamp_note(run) if early else ""),
        Metric("Duration", _duration(duration), duration, note=clamp_note(run) if skewed else ""),
    ]


def _metrics(run: Run, cards: list[Card], usage: Any) -> list[Metric]:
    tokens_in, tokens_out = _tokens(cards, usage)
    finish = next(
        (c.item.finish_reason for c in reversed(cards) if c.item.message.role == "assistant"), ""
    )
    parameters = run.parameters if isinstance(run.parameters, dict) else {}
    return [
        Metric("Generator", run.generator or NO_VALUE),
        Metric(
            "Model",
            run.model or next((c.item.model for c in cards if c.item.model), "") or NO_VALUE,
        ),
        Metric(
            "Parameters", ", ".join(f"{k}={v}" for k, v in sorted(parameters.items())) or NO_VALUE
        ),
        Metric("Input tokens", NO_VALUE if tokens_in is None else str(tokens_in), tokens_in),
        Metric("Output tokens", NO_VALUE if tokens_out is None else str(tokens_out), tokens_out),
        Metric("Finish reason", finish or NO_VALUE),
        *_timings(run),
        Metric("Events", str(run.last_seq), run.last_seq),
    ]


# --- building the page -------------------------------------------------------------------


def _column(
    run: Run, kind: str, messages: list[Message], thread: Thread, *, materialized: bool, usage: Any
) -> Column:
    cards, tools = _cards(message_items(thread, messages))
    if materialized and messages:
        url = reverse("conversation", args=[run.thread_id])
        open_url = f"{url}?leaf={messages[0].id}#m-{messages[0].id}"
    else:
        open_url = reverse("run_detail", args=[run.id])
    metrics = _metrics(run, cards, usage)
    return Column(run, kind, cards, tools, metrics, open_url, materialized=materialized)


def columns(
    thread: Thread, runs: Sequence[Run], contents: selectors.BranchContents, *, reader_id: Any
) -> list[Column]:
    """Columns for runs (in order), with their ratings, each compared to the first.

    Committed and superseded runs show their stored messages (from selectors.branch_contents);
    the others (failed, cancelled, open) what their events amount to.
    """
    rows, projections, scores = contents.stored, contents.projections, contents.ratings
    judged = branch_judgement(thread, runs, rows)
    result: list[Column] = []
    for number, run in enumerate(runs, start=1):
        kind = run.status
        if run.id in rows:
            messages = rows[run.id]
            # Branch state, not run status: the branch shown is active when its last message
            # is (a run that also wrote the prompt above may hold the fork point's child).
            kind = "active" if messages and messages[-1].active else "alternative"
            for message in messages:
                message.run = run  # already loaded: no query per message
            column = _column(run, kind, messages, thread, materialized=True, usage=run.usage)
        else:
            projection = projections[run.id]
            messages = projected_messages(thread, run, projection.messages)
            usage = projection.metadata.get("usage")
            column = _column(run, kind, messages, thread, materialized=False, usage=usage)
        column.number = number
        column.ratings = scores[run.id]
        column.mine = next((r for r in column.ratings if r.user_id == reader_id), None)
        column.judgement = judged.get(run.id, BranchJudgement())
        if result:
            _compare(column, result[0])
        result.append(column)
    return result


def ordered(runs: list[Run], fork_id: str | None) -> list[Run]:
    """The leading branch, then superseded, committed, live, failed, cancelled; newest first.

    The leading branch is the one on the thread's active path or, when the fork point is off
    that path, the committed run forked there (the one the superseded runs point to).
    """
    newest_first = sorted(runs, key=lambda r: (r.created_at, r.id), reverse=True)
    lead = next((r for r in newest_first if getattr(r, "on_active_path", False)), None) or next(
        (r for r in newest_first if r.status == RunStatus.COMMITTED and r.fork_from_id == fork_id),
        None,
    )
    return sorted(newest_first, key=lambda r: -1 if r is lead else RANK[r.status])
