"""What the experiments pages show (issue 29): the project's list, the create form's choices
and how its fields become an experiment request, and the results page (header, progress,
summary lines, sortable headers, filters, rows with both answers rendered side by side, the
word diff, metrics, evaluations and verdicts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.safestring import SafeString

from transcripts.generation.evaluators import TYPES as EVALUATOR_TYPES
from transcripts.generation.generators import EXTERNAL
from transcripts.jsonvalue import JsonObject
from transcripts.models import Experiment, ExperimentStatus, ItemStatus, Thread
from transcripts.selectors.experiment_results import (
    SORTS,
    ListCounts,
    Rate,
    ResultFilter,
    ResultPage,
    ResultRow,
    Summary,
    outcome_label,
)
from transcripts.selectors.experiments import Progress
from transcripts.web.presenters.compare_text import rendered_text, word_diff
from transcripts.web.presenters.messages import MessageItem, message_items
from transcripts.web.presenters.runs import ModelChoice, model_choices

NO_VALUE = "\N{EN DASH}"

STATUS_WORDS: dict[str, str] = {
    ExperimentStatus.RUNNING: "running",
    ExperimentStatus.PAUSED: "paused",
    ExperimentStatus.CANCELLED: "cancelled",
    ExperimentStatus.COMPLETED: "completed",
}
ITEM_WORDS: dict[str, str] = {
    ItemStatus.PENDING: "waiting",
    ItemStatus.QUEUED: "queued",
    ItemStatus.RUNNING: "generating",
    ItemStatus.DONE: "done",
    ItemStatus.FAILED: "failed",
    ItemStatus.CANCELLED: "cancelled",
}

# The fork rules as the form offers them: value, label, one line of explanation.
FORK_RULES = (
    ("last-user", "Last user message", "Answer each thread's last question again."),
    ("each-user", "Every user message", "Answer every question again, each on its own branch."),
    ("message", "Given messages", "Answer again (or regenerate) the message ids you list."),
)


@dataclass(frozen=True)
class EvaluatorCheck:
    """A checkbox of the form: an evaluator that needs no setting."""

    type: str
    label: str
    hint: str
    config: JsonObject


# Every evaluator the form knows; it offers those this build's evaluators run (TYPES).
CHECKS = (
    EvaluatorCheck("exact-match", "Exact match", "the same text as the baseline", {}),
    EvaluatorCheck("json", "Valid JSON", "the candidate's text parses as JSON", {}),
    EvaluatorCheck(
        "length-ratio",
        "Length ratio 0.5\N{EN DASH}2",
        "the candidate is half to twice the baseline's length",
        {"min": 0.5, "max": 2},
    ),
    EvaluatorCheck("tool-calls", "Tool-call match", "the same tools with the same arguments", {}),
)


def offered_checks() -> list[EvaluatorCheck]:
    """The checkboxes the form shows."""
    return [c for c in CHECKS if c.type in EVALUATOR_TYPES]


def offers(kind: str) -> bool:
    """Whether this build runs the evaluator type kind (contains, regex, llm-judge)."""
    return kind in EVALUATOR_TYPES


def candidate_models() -> list[tuple[str, list[ModelChoice]]]:
    """The Regenerate form's grouped model select, without the external generator (an
    experiment runs on this server's workers)."""
    return [
        (group, [c for c in choices if c.generator != EXTERNAL])
        for group, choices in model_choices()
        if any(c.generator != EXTERNAL for c in choices)
    ]


def evaluator_configs(
    checked: Sequence[str], *, contains: str, regex: str, judge: str, rubric: str
) -> list[JsonObject]:
    """The evaluators the form asks for (judge: "generator:model" of the LLM judge, "" none)."""
    known = {c.type: c for c in CHECKS}
    configs: list[JsonObject] = [
        {"type": kind, **known[kind].config} for kind in checked if kind in known
    ]
    if contains.strip():
        configs.append({"type": "contains", "text": contains.strip()})
    if regex.strip():
        configs.append({"type": "regex", "pattern": regex.strip()})
    if judge:
        generator, _, model = judge.partition(":")
        configs.append(
            {"type": "llm-judge", "generator": generator, "model": model, "rubric": rubric.strip()}
        )
    return configs


# --- the list --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListRow:
    """One experiment on the project's list."""

    experiment: Experiment
    status: str
    counts: ListCounts

    @property
    def progress_text(self) -> str:
        """E.g. "12/40"."""
        return f"{self.counts.finished}/{self.counts.total}"

    @property
    def candidate(self) -> str:
        """generator · model."""
        return " · ".join(b for b in (self.experiment.generator, self.experiment.model) if b)


def list_rows(experiments: Sequence[Experiment], counts: Mapping[str, ListCounts]) -> list[ListRow]:
    """The list's rows."""
    return [
        ListRow(e, STATUS_WORDS.get(e.status, e.status), counts.get(e.id, ListCounts()))
        for e in experiments
    ]


# --- the header and the progress ------------------------------------------------------------


def fork_rule_label(rule: str) -> str:
    """The fork rule in words."""
    return next((label for value, label, _ in FORK_RULES if value == rule), rule)


def source_text(source: object) -> str:
    """Where the threads came from, in words."""
    if not isinstance(source, dict):
        return NO_VALUE
    bits = []
    if source.get("filter") == "?":
        bits.append("the whole thread list")
    elif source.get("filter"):
        bits.append(f"the thread-list filter “{source['filter']}”")
    if source.get("tag"):
        bits.append(f"the tag “{source['tag']}”")
    if source.get("queue"):
        bits.append(f"queue {source['queue']}")
    if source.get("threadIds"):
        bits.append(f"{source['threadIds']} chosen threads")
    return ", ".join(bits) or NO_VALUE


@dataclass(frozen=True)
class ProgressView:
    """The progress bar: finished of total, and the text beside it."""

    progress: Progress
    running: bool

    @property
    def failed(self) -> int:
        """Items that failed."""
        return self.progress.counts.get(ItemStatus.FAILED, 0)

    @property
    def text(self) -> str:
        """E.g. "12 of 40 done, 1 failed"."""
        return f"{self.progress.finished} of {self.progress.total} done, {self.failed} failed"


# --- the summary ---------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    """A share as a whole percent."""
    return NO_VALUE if value is None else f"{round(100 * value)} %"


def rate_text(rate: Rate) -> str:
    """E.g. "40 % of 25 (95 % interval 23-59 %)"."""
    if not rate.total:
        return "none yet"
    low, high = rate.interval or (0.0, 0.0)
    return (
        f"{percent(rate.value)} of {rate.total} "
        f"(95 % interval {round(100 * low)}\N{EN DASH}{round(100 * high)} %)"
    )


METRIC_LABELS = {
    "tokensIn": "Tokens in",
    "tokensOut": "Tokens out",
    "latencyMs": "Latency",
    "ttftMs": "Time to first token",
    "cost": "Cost",
    "length": "Length",
}


def metric_text(name: str, value: float | None) -> str:
    """A metric's value with its unit."""
    if value is None:
        return NO_VALUE
    if name in ("latencyMs", "ttftMs"):
        return f"{value / 1000:.2f} s" if value >= 1000 else f"{round(value)} ms"
    if name == "cost":
        return f"${value:.4f}"
    if name == "length":
        return f"{round(value):,} chars"
    return f"{round(value):,}"


@dataclass(frozen=True)
class MetricLine:
    """One metric of the summary: baseline and candidate mean, p50, p95."""

    label: str
    baseline: tuple[str, str, str]
    candidate: tuple[str, str, str]


@dataclass(frozen=True)
class EvaluatorLine:
    """One evaluator's pass rates in words."""

    name: str
    candidate: str
    baseline: str


@dataclass(frozen=True)
class SummaryView:
    """The summary in words."""

    summary: Summary
    metrics: list[MetricLine]
    evaluators: list[EvaluatorLine]
    win_rate: str
    cost_delta: str


def summary_view(summary: Summary) -> SummaryView:
    """The summary's lines."""
    lines = []
    for name, label in METRIC_LABELS.items():
        sides = []
        for side in ("baseline", "candidate"):
            figure = summary.metrics.get(side, {}).get(name)
            sides.append(
                (
                    metric_text(name, figure.mean if figure else None),
                    metric_text(name, figure.p50 if figure else None),
                    metric_text(name, figure.p95 if figure else None),
                )
            )
        lines.append(MetricLine(label, sides[0], sides[1]))
    evaluators = [
        EvaluatorLine(
            e.name, rate_text(e.candidate), rate_text(e.baseline) if e.baseline.total else NO_VALUE
        )
        for e in summary.evaluators
    ]
    delta = summary.cost_delta
    sign = "+" if delta is not None and delta >= 0 else "\N{MINUS SIGN}"
    cost = NO_VALUE if delta is None else f"{sign}${abs(delta):.4f}"
    return SummaryView(summary, lines, evaluators, rate_text(summary.win_rate), cost)


# --- sorting and filtering ----------------------------------------------------------------------


@dataclass(frozen=True)
class SortHeader:
    """A column header: its label, the link that sorts by it (or flips it), aria-sort."""

    key: str
    label: str
    url: str
    aria_sort: str = ""


def _short(key: str) -> str:
    if "-" not in key:
        return {"position": "#", "title": "Thread", "status": "Status", "outcome": "Verdict"}[key]
    side, metric = key.split("-", 1)
    return f"{METRIC_LABELS[metric]} ({side})"


def query_with(params: Mapping[str, str], **changes: str) -> str:
    """The query string of params with changes ("" removes a key), page reset."""
    kept = {k: v for k, v in params.items() if v and k != "page"}
    for key, value in changes.items():
        if value:
            kept[key] = value
        else:
            kept.pop(key, None)
    return "?" + urlencode(kept) if kept else "?"


def sort_headers(params: Mapping[str, str], spec: ResultFilter) -> list[SortHeader]:
    """A header per sort key: ascending first, descending when it is the current ascending."""
    headers = []
    for key in SORTS:
        state = ""
        target = key
        if spec.sort_key == key:
            state = "descending" if spec.descending else "ascending"
            target = key if spec.descending else f"-{key}"
        headers.append(SortHeader(key, _short(key), query_with(params, sort=target), state))
    return headers


def filter_params(params: Mapping[str, str]) -> dict[str, str]:
    """The results' query parameters that the page keeps across its links."""
    keys = ("disagreements", "status", "outcome", "tag", "failing", "sort")
    return {k: params.get(k, "") for k in keys if params.get(k, "")}


# --- the rows ---------------------------------------------------------------------------------


@dataclass
class SideView:
    """One answer of a row: its cards and metrics, or why there is none."""

    label: str
    items: list[MessageItem]
    metrics: list[tuple[str, str]]
    empty: str = ""
    text: str = ""


@dataclass
class EvaluationView:
    """One evaluator's result on a row, in words."""

    name: str
    result: str
    detail: str


@dataclass
class RowView:
    """One row of the results."""

    row: ResultRow
    status: str
    verdict: str
    thread_url: str
    baseline: SideView
    candidate: SideView
    evaluations: list[EvaluationView] = field(default_factory=list)
    diff: SafeString | None = None
    similarity: str = ""
    error: str = ""
    original_url: str = ""

    @property
    def adoptable(self) -> bool:
        """Whether the candidate may be adopted (done, not adopted yet)."""
        item = self.row.item
        return item.status == ItemStatus.DONE and item.run_id is not None and not item.adopted_at


def _metrics(row: ResultRow, side: str) -> list[tuple[str, str]]:
    return [
        (label, metric_text(name, row.metric(side, name))) for name, label in METRIC_LABELS.items()
    ]


def _passed(value: object) -> str:
    if not isinstance(value, bool):
        return NO_VALUE
    return "passed" if value else "failed"


def _evaluations(raw: object) -> list[EvaluationView]:
    views = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        result = f"candidate {_passed(entry.get('passed'))}"
        if isinstance(entry.get("baselinePassed"), bool):
            result += f", baseline {_passed(entry.get('baselinePassed'))}"
        views.append(
            EvaluationView(str(entry.get("name", "")), result, str(entry.get("detail") or ""))
        )
    return views


def _leaf_url(thread: Thread, message_ids: Sequence[str]) -> str:
    url = reverse("conversation", args=[thread.id])
    return f"{url}?leaf={message_ids[-1]}" if message_ids else url


def _side(thread: Thread, row: ResultRow, side: str) -> SideView:
    messages = row.baseline if side == "baseline" else row.candidate
    items = message_items(thread, messages)
    text = "\n\n".join(
        rendered_text(part.html)
        for item in items
        if item.message.role == "assistant"
        for part in item.parts
        if part.type == "text"
    )
    empty = ""
    if not messages:
        if side == "baseline":
            empty = "No answer at this fork point when the experiment was made."
        else:
            empty = f"No candidate: {ITEM_WORDS.get(row.item.status, row.item.status)}."
    return SideView(side.capitalize(), items, _metrics(row, side), empty, text)


def _error(raw: object) -> str:
    if isinstance(raw, dict):
        return str(raw.get("message") or raw.get("code") or "")
    return ""


def row_view(row: ResultRow) -> RowView:
    """A row's view."""
    thread = row.thread
    baseline, candidate = _side(thread, row, "baseline"), _side(thread, row, "candidate")
    diff = None
    similarity = ""
    if row.candidate and (baseline.text or candidate.text):
        diff, ratio = word_diff(baseline.text, candidate.text)
        similarity = f"{round(100 * ratio)} % similar"
    candidate_ids = [m.id for m in row.candidate]
    item = row.item
    return RowView(
        row=row,
        status=ITEM_WORDS.get(item.status, item.status),
        verdict=outcome_label(item.outcome) + (" (by a person)" if item.person_outcome else ""),
        thread_url=_leaf_url(thread, candidate_ids) if candidate_ids else _leaf_url(thread, []),
        baseline=baseline,
        candidate=candidate,
        evaluations=_evaluations(item.evaluations),
        diff=diff,
        similarity=similarity,
        error=_error(item.error) if item.status == ItemStatus.FAILED else "",
        original_url=_leaf_url(thread, [str(i) for i in item.baseline_ids or []]),
    )


def row_views(page: ResultPage) -> list[RowView]:
    """The page's rows."""
    return [row_view(row) for row in page.rows]
