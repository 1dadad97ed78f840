"""Compare view: every branch at a fork point side by side, with differences marked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from difflib import SequenceMatcher
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from transcripts import ledger, selectors
from transcripts.errors import DomainError
from transcripts.ids import is_ulid
from transcripts.ledger import moderation, ratings
from transcripts.models import Message, Run, RunRating, RunStatus, Thread
from transcripts.web.views.browse import (
    HtmxHttpRequest,
    PartView,
    _message_or_404,
    _part_view,
    _seconds,
    _short,
    _text,
    _thread_or_404,
    _usage_number,
)

MAX_COLUMNS = 10
NO_VALUE = "\N{EN DASH}"
ROOT = "root"  # the fork point of the runs that start a new root
DIFF_TOKENS = 20_000  # beyond this many words a side, texts are compared line by line

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


# --- what a column shows ---------------------------------------------------------------


@dataclass
class BranchMessage:
    """A message of a branch: a materialized row, or a projection of a run's events."""

    id: str
    role: str
    parts: list[Any]
    metadata: dict[str, Any]
    created_at: datetime | None
    materialized: bool
    flagged: bool = False
    redacted: bool = False

    @classmethod
    def from_row(cls, message: Message) -> BranchMessage:
        """A materialized message."""
        meta = message.metadata if isinstance(message.metadata, dict) else {}
        return cls(
            id=message.id,
            role=message.role,
            parts=message.parts if isinstance(message.parts, list) else [],
            metadata=meta,
            created_at=message.created_at,
            materialized=True,
            flagged=bool(meta.get("flagged") or message.flagged_at),
            redacted=bool(meta.get("redacted") or message.redacted_at),
        )

    @classmethod
    def from_projection(cls, message: dict[str, Any]) -> BranchMessage:
        """A message of a run that was never materialized (failed, cancelled, live)."""
        meta = message.get("metadata")
        parts = message.get("parts")
        try:
            created_at: datetime | None = datetime.fromisoformat(str(message.get("createdAt")))
        except ValueError:
            created_at = None
        return cls(
            id=str(message.get("id", "")),
            role=str(message.get("role", "")),
            parts=parts if isinstance(parts, list) else [],
            metadata=meta if isinstance(meta, dict) else {},
            created_at=created_at,
            materialized=False,
        )


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
    """A message of a column, ready for the template."""

    message: BranchMessage
    key: tuple[str, bool, int]  # role, has text, rank among the column's messages like it
    parts: list[PartItem]
    text: str
    agent: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = ""
    errors: list[str] = field(default_factory=list)
    similarity: int | None = None  # percent of the text shared with the first column
    new: bool = False  # no counterpart in the first column


@dataclass
class Metric:
    """One cell of the metrics rows."""

    label: str
    value: str
    raw: Any = None
    delta: str = ""
    differs: bool = False


@dataclass
class Column:
    """One branch: its run, its messages and how they differ from the first column."""

    run: Run
    kind: str
    cards: list[Card]
    tools: list[ToolUse]
    metrics: list[Metric]
    open_url: str
    ratings: list[RunRating] = field(default_factory=list)
    mine: RunRating | None = None
    missing: list[str] = field(default_factory=list)
    number: int = 0

    @property
    def preferred(self) -> list[RunRating]:
        """The ratings that mark this run preferred."""
        return [r for r in self.ratings if r.preferred]

    @property
    def notes(self) -> list[RunRating]:
        """The ratings that carry a note."""
        return [r for r in self.ratings if r.note]

    @property
    def restorable(self) -> bool:
        """Whether the restore action applies."""
        return self.run.status == RunStatus.SUPERSEDED

    @property
    def rateable(self) -> bool:
        """Whether the run is finished, so that it can be rated."""
        return not self.run.is_open


def _cards(messages: list[BranchMessage], thread: Thread) -> tuple[list[Card], list[ToolUse]]:
    """Cards of a column, tool results joined to their calls as in the conversation view."""
    agents = thread.agents if isinstance(thread.agents, dict) else {}
    cards: list[Card] = []
    tools: list[ToolUse] = []
    calls: dict[str, tuple[PartView, ToolUse]] = {}
    seen_roles: dict[tuple[str, bool], int] = {}
    seen_tools: dict[str, int] = {}

    def tool_key(name: str) -> tuple[str, int]:
        seen_tools[name] = seen_tools.get(name, 0) + 1
        return (name, seen_tools[name])

    for message in messages:
        meta = message.metadata
        items: list[PartItem] = []
        texts: list[str] = []
        for raw in message.parts:
            view = _part_view(raw)
            item = PartItem(view)
            items.append(item)
            data = raw if isinstance(raw, dict) else {}
            if view.type == "text":
                item.in_diff = not texts
                texts.append(view.text)
            elif view.type == "tool-call":
                use = ToolUse(key=tool_key(view.tool_name), input=data.get("input"), item=item)
                tools.append(use)
                if view.tool_call_id:
                    calls[view.tool_call_id] = (view, use)
            elif view.type == "tool-result":
                joined = calls.get(view.tool_call_id)
                if joined is not None and joined[0].result is None:
                    call, use = joined
                    call.result = view
                    view.joined = True
                    view.tool_name = view.tool_name or call.tool_name
                else:
                    name = f"result of {view.tool_name or 'tool'}"
                    use = ToolUse(key=tool_key(name), input=None, item=item)
                    tools.append(use)
                use.output = data.get("output")
                use.is_error = view.is_error
                use.has_result = True
        # Messages pair up by role among those with text (answers) and those without (calls).
        kind = (message.role, bool(texts))
        seen_roles[kind] = seen_roles.get(kind, 0) + 1
        agent_id = _text(meta.get("agentId"))
        agent = agents.get(agent_id) if agent_id else None
        usage = meta.get("usage")
        errors = meta.get("errors")
        cards.append(
            Card(
                message=message,
                key=(*kind, seen_roles[kind]),
                parts=items,
                text="\n\n".join(texts),
                agent=(_text(agent.get("agent_name")) if isinstance(agent, dict) else "")
                or agent_id,
                model=_text(meta.get("model")),
                input_tokens=_usage_number(usage, "inputTokens", "input_tokens"),
                output_tokens=_usage_number(usage, "outputTokens", "output_tokens"),
                finish_reason=_text(meta.get("finishReason")),
                errors=[_short(e) for e in errors] if isinstance(errors, list) else [],
            )
        )
    return cards, tools


# --- differences -------------------------------------------------------------------------

# Words keep their trailing whitespace, so spaces alone never count as common ground.
_WORDS = re.compile(r"\s+|\S+\s*")


def word_diff(before: str, after: str) -> tuple[SafeString, float]:
    """after marked up against before, word by word (<ins>, <del>), and their similarity."""
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    if len(old) > DIFF_TOKENS or len(new) > DIFF_TOKENS:
        old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    out: list[str] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(str(escape("".join(new[j1:j2]))))
            continue
        removed, added = "".join(old[i1:i2]).strip(), "".join(new[j1:j2])
        if removed:
            out.append(f'<del class="diff-del">{escape(removed)}</del>')
        # Whitespace around the added words stays outside the mark.
        core = added.strip()
        start = added.index(core) if core else len(added)
        out.append(str(escape(added[:start])))
        if core:
            out.append(f'<ins class="diff-add">{escape(core)}</ins>')
            out.append(str(escape(added[start + len(core) :])))
    return mark_safe("".join(out)), matcher.ratio()


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
        if not card.text and (other is None or not other.text):
            continue
        diff, ratio = word_diff(other.text if other else "", card.text)
        card.similarity = round(ratio * 100)
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
        return (
            _usage_number(usage, "inputTokens", "input_tokens"),
            _usage_number(usage, "outputTokens", "output_tokens"),
        )
    inputs = [c.input_tokens for c in cards if c.input_tokens is not None]
    outputs = [c.output_tokens for c in cards if c.output_tokens is not None]
    return (sum(inputs) if inputs else None, sum(outputs) if outputs else None)


def _metrics(run: Run, cards: list[Card], usage: Any) -> list[Metric]:
    start = run.started_at or run.created_at
    end = run.finished_at or (timezone.now() if run.is_open else None)
    ttft, duration = _seconds(start, run.first_event_at), _seconds(start, end)
    tokens_in, tokens_out = _tokens(cards, usage)
    finish = next((c.finish_reason for c in reversed(cards) if c.message.role == "assistant"), "")
    parameters = run.parameters if isinstance(run.parameters, dict) else {}
    return [
        Metric("Generator", run.generator or NO_VALUE),
        Metric("Model", run.model or next((c.model for c in cards if c.model), "") or NO_VALUE),
        Metric(
            "Parameters", ", ".join(f"{k}={v}" for k, v in sorted(parameters.items())) or NO_VALUE
        ),
        Metric("Input tokens", NO_VALUE if tokens_in is None else str(tokens_in), tokens_in),
        Metric("Output tokens", NO_VALUE if tokens_out is None else str(tokens_out), tokens_out),
        Metric("Finish reason", finish or NO_VALUE),
        Metric("First token", _duration(ttft), ttft),
        Metric("Duration", _duration(duration), duration),
        Metric("Events", str(run.last_seq), run.last_seq),
    ]


# --- building the page -------------------------------------------------------------------


def _column(
    run: Run, kind: str, messages: list[BranchMessage], thread: Thread, usage: Any
) -> Column:
    cards, tools = _cards(messages, thread)
    first = next((m for m in messages if m.materialized), None)
    if first is not None:
        url = reverse("conversation", args=[run.thread_id])
        open_url = f"{url}?leaf={first.id}#m-{first.id}"
    else:
        open_url = reverse("run_detail", args=[run.id])
    return Column(run, kind, cards, tools, _metrics(run, cards, usage), open_url)


def _columns(
    request: HtmxHttpRequest, thread: Thread, runs: list[Run], *, below_depth: int
) -> list[Column]:
    """Columns for runs (in order), with their ratings, each compared to the first."""
    stored = [r for r in runs if r.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED)]
    rows = selectors.run_messages([r.id for r in stored], below_depth=below_depth)
    projections = selectors.run_projections([r for r in runs if r.id not in rows])
    scores = selectors.run_ratings([r.id for r in runs])
    columns: list[Column] = []
    for number, run in enumerate(runs, start=1):
        kind = "active" if getattr(run, "on_active_path", False) else run.status
        if run.id in rows:
            branch = [BranchMessage.from_row(m) for m in rows[run.id]]
            column = _column(run, kind, branch, thread, run.usage)
        else:
            projection = projections[run.id]
            branch = [BranchMessage.from_projection(m) for m in projection.messages]
            column = _column(run, kind, branch, thread, projection.metadata.get("usage"))
        column.number = number
        column.ratings = scores[run.id]
        column.mine = next((r for r in column.ratings if r.user_id == request.user.pk), None)
        if columns:
            _compare(column, columns[0])
        columns.append(column)
    return columns


def _ordered(runs: list[Run], fork_id: str | None) -> list[Run]:
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


def _render(request: HtmxHttpRequest, context: dict[str, Any]) -> HttpResponse:
    thread = context["thread"]
    if thread.hidden and not request.htmx:
        moderation.record_hidden_view(user=request.user, thread=thread)
    params = request.GET.copy()
    params["view"] = "rendered"
    context["rendered_url"] = f"{request.path}?{params.urlencode()}"
    params["view"] = "diff"
    context["diff_url"] = f"{request.path}?{params.urlencode()}"
    context["show_diff"] = request.GET.get("view") != "rendered"
    template = "transcripts/compare.html"
    if request.htmx:
        template += "#compare"
    return render(request, template, context)


@login_required
@require_GET
def compare_fork(request: HtmxHttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """Every branch below one fork point: the active one first, then the alternatives."""
    thread = _thread_or_404(request, thread_id)
    fork = None if message_id == ROOT else _message_or_404(thread, message_id)
    runs = _ordered(selectors.branch_runs(thread, fork), fork.id if fork else None)
    shown, more = runs[:MAX_COLUMNS], runs[MAX_COLUMNS:]
    columns = _columns(request, thread, shown, below_depth=fork.depth if fork else -1)
    url = reverse("conversation", args=[thread.id])
    context = {
        "thread": thread,
        "fork": fork,
        "fork_url": f"{url}?leaf={fork.id}#m-{fork.id}" if fork is not None else url,
        "columns": columns,
        "more": [(run, _pair_url(shown[0], run)) for run in more],
        "url": url,
        "here": request.get_full_path(),
    }
    return _render(request, context)


def _pair_url(a: Run, b: Run) -> str:
    return f"{reverse('compare_runs')}?a={a.id}&b={b.id}"


def _visible_run(request: HtmxHttpRequest, run_id: str) -> Run:
    if not is_ulid(run_id):
        raise Http404("no such run")
    runs = Run.objects.select_related("thread").defer("snapshot")
    if not request.user.is_staff:
        runs = runs.filter(thread__hidden=False)
    return get_object_or_404(runs, pk=run_id)


@login_required
@require_GET
def compare_runs(request: HtmxHttpRequest) -> HttpResponse:
    """Two runs side by side (?a=&b=), the second compared to the first."""
    a = _visible_run(request, request.GET.get("a", ""))
    b = _visible_run(request, request.GET.get("b", ""))
    thread = a.thread
    # Where one run continues from a message of the other, show only what follows it.
    below_depth = -1
    if a.thread_id == b.thread_id:
        forks = Message.objects.filter(
            pk__in=[f for f in (a.fork_from_id, b.fork_from_id) if f], run__in=[a, b]
        ).values_list("depth", flat=True)
        below_depth = max(forks, default=-1)
    columns = _columns(request, thread, [a, b], below_depth=below_depth)
    url = reverse("conversation", args=[thread.id])
    context = {
        "thread": thread,
        "other_thread": b.thread if b.thread_id != a.thread_id else None,
        "fork": None,
        "pair": True,
        "fork_url": url,
        "columns": columns,
        "more": [],
        "url": url,
        "here": request.get_full_path(),
    }
    return _render(request, context)


# --- actions -----------------------------------------------------------------------------


class RatingForm(forms.Form):
    """Mark (or unmark) a run as preferred, with an optional note."""

    preferred = forms.BooleanField(required=False)
    note = forms.CharField(required=False, max_length=ratings.MAX_NOTE)


def _back(request: HtmxHttpRequest, run: Run) -> str:
    """Where to go after an action: the page that asked (same site), else the run's compare."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse("compare", args=[run.thread_id, run.fork_from_id or ROOT])


def _after_action(request: HtmxHttpRequest, run: Run, error: str, done: str) -> HttpResponse:
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    # htmx follows the redirect with its headers, so the compare view answers with its partial.
    return HttpResponseRedirect(_back(request, run), status=303)


@login_required
@require_POST
def restore(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Make a superseded run's branch the active one again."""
    run = _visible_run(request, run_id)
    error = ""
    try:
        ledger.restore_run(run=run)
    except DomainError as exc:
        error = f"Could not restore: {exc.message}"
    return _after_action(request, run, error, "Restored: this branch is the active one again.")


@login_required
@require_POST
def rate(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    """Mark a run as the reader's preferred alternative (or unmark it), with a note."""
    run = _visible_run(request, run_id)
    form = RatingForm(request.POST)
    error = ""
    if not form.is_valid():
        error = "Could not save the rating: " + " ".join(
            str(e) for errors in form.errors.values() for e in errors
        )
    else:
        try:
            ratings.rate_run(
                user=request.user,
                run=run,
                preferred=form.cleaned_data["preferred"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            error = f"Could not save the rating: {exc.message}"
    done = "Marked as your preferred run." if form.cleaned_data.get("preferred") else "Saved."
    return _after_action(request, run, error, done)
