"""Judge mode and two experiments compared (issue 29): the answers of a pair as message
cards with their metrics and evaluator results, the summaries in words, and the links back to
an experiment's page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.urls import reverse

from transcripts.models import Experiment, Project, Thread
from transcripts.selectors.experiment_judge import JudgePair
from transcripts.selectors.experiment_results import (
    METRICS,
    MetricSummary,
    PairedRow,
    ResultFilter,
    ResultRow,
    Summary,
    outcome_label,
)
from transcripts.web.presenters.experiments import METRIC_LABELS, metric_text, rate_text
from transcripts.web.presenters.messages import MessageItem, message_items

NO_VALUE = "\N{EN DASH}"
# The filter's query-string keys judge mode keeps from one pair to the next.
FILTER_KEYS = ("disagreements", "status", "outcome", "tag", "failing")
# The verdicts, as the buttons say them (the key pressed, the label).
VERDICTS = (("a", "A is better"), ("b", "B is better"), ("t", "Tie"))


def experiment_url(project: Project, experiment: Experiment) -> str:
    """The experiment's page."""
    return reverse("experiment", args=[project.slug, experiment.id])


def filter_fields(spec: ResultFilter) -> list[tuple[str, str]]:
    """The filter as (name, value) pairs for a query string or hidden fields ("" left out)."""
    values = {
        "disagreements": "1" if spec.disagreements else "",
        "status": spec.status,
        "outcome": spec.outcome,
        "tag": spec.tag,
        "failing": spec.failing,
    }
    return [(key, values[key]) for key in FILTER_KEYS if values[key]]


@dataclass(frozen=True)
class MetricCell:
    """One metric of one side."""

    label: str
    value: str


@dataclass(frozen=True)
class EvaluationLine:
    """One evaluator's result on one side: passed, failed or not judged, in words."""

    name: str
    verdict: str  # "passed", "failed" or "" when the evaluator does not judge this side
    detail: str = ""


@dataclass
class Side:
    """One answer of a row: its cards, metrics and evaluator results."""

    title: str
    items: list[MessageItem]
    metrics: list[MetricCell]
    evaluations: list[EvaluationLine] = field(default_factory=list)
    note: str = ""  # why there is no answer


def _evaluations(evaluations: object, key: str) -> list[EvaluationLine]:
    """The evaluator results of one side ("passed" for the candidate, "baselinePassed")."""
    lines: list[EvaluationLine] = []
    for entry in evaluations if isinstance(evaluations, list) else []:
        if not isinstance(entry, dict):
            continue
        passed = entry.get(key)
        verdict = "passed" if passed is True else "failed" if passed is False else ""
        if verdict:
            detail = entry.get("detail") if key == "passed" else ""
            lines.append(EvaluationLine(str(entry.get("name", "")), verdict, str(detail or "")))
    return lines


def _metrics(row: ResultRow, side: str) -> list[MetricCell]:
    return [MetricCell(METRIC_LABELS[m], metric_text(m, row.metric(side, m))) for m in METRICS]


def baseline_side(row: ResultRow, title: str = "A · baseline") -> Side:
    """The row's baseline answer."""
    return Side(
        title=title,
        items=message_items(row.thread, row.baseline),
        metrics=_metrics(row, "baseline"),
        evaluations=_evaluations(row.item.evaluations, "baselinePassed"),
        note="" if row.baseline else "This fork point had no answer.",
    )


def candidate_side(row: ResultRow, title: str = "B · candidate") -> Side:
    """The row's candidate answer (a note for one not made yet or that failed)."""
    note = ""
    if not row.candidate:
        note = f"No candidate answer ({row.item.status})."
    return Side(
        title=title,
        items=message_items(row.thread, row.candidate),
        metrics=_metrics(row, "candidate"),
        evaluations=_evaluations(row.item.evaluations, "passed"),
        note=note,
    )


def verdict_text(row: ResultRow) -> str:
    """The row's verdicts in words: the person's, else the LLM judge's, else none."""
    item = row.item
    if item.person_outcome:
        return f"Judged: {outcome_label(item.person_outcome)}"
    if item.judge_outcome:
        return f"LLM judge: {outcome_label(item.judge_outcome)}"
    return "Not judged"


@dataclass
class JudgeView:
    """What judge mode shows of a pair."""

    row: ResultRow
    thread: Thread
    context: list[MessageItem]
    earlier: int
    sides: list[Side]
    verdict: str


def judge_view(pair: JudgePair) -> JudgeView:
    """The pair's conversation end, its two answers and its verdict so far."""
    row = pair.row
    return JudgeView(
        row=row,
        thread=row.thread,
        context=message_items(row.thread, pair.context),
        earlier=pair.earlier,
        sides=[baseline_side(row), candidate_side(row)],
        verdict=verdict_text(row),
    )


# --- two experiments ---------------------------------------------------------------------------


@dataclass
class CompareRow:
    """One shared fork point: the baseline and each experiment's candidate."""

    thread: Thread
    fork_id: str | None
    sides: list[Side]
    verdicts: list[str]


def compare_rows(rows: Sequence[PairedRow], names: tuple[str, str]) -> list[CompareRow]:
    """The shared fork points as three columns each: baseline, A's candidate, B's."""
    shown: list[CompareRow] = []
    for paired in rows:
        first = paired.first
        sides = [baseline_side(first, "Baseline"), candidate_side(first, f"A · {names[0]}")]
        verdicts = [f"A: {verdict_text(first).lower()}"]
        if paired.second is not None:
            sides.append(candidate_side(paired.second, f"B · {names[1]}"))
            verdicts.append(f"B: {verdict_text(paired.second).lower()}")
        shown.append(CompareRow(first.thread, first.item.fork_from_id, sides, verdicts))
    return shown


@dataclass(frozen=True)
class SummaryLine:
    """A line of a summary: what, and its figure in words."""

    label: str
    value: str


@dataclass(frozen=True)
class MetricRow:
    """One metric of a summary: each side's mean and p95."""

    label: str
    baseline: str
    candidate: str


@dataclass(frozen=True)
class SummaryView:
    """An experiment's summary: verdict counts, rates and cost delta as lines, then the
    metrics as rows."""

    lines: list[SummaryLine]
    metrics: list[MetricRow]


def summary_view(said: Summary) -> SummaryView:
    """An experiment's summary in words: verdicts, win rate, cost delta, evaluator pass rates
    and each metric's mean and p95 per side."""
    lines = [
        SummaryLine("Candidate better", str(said.wins)),
        SummaryLine("Baseline better", str(said.losses)),
        SummaryLine("Ties", str(said.ties)),
        SummaryLine("Not judged", str(said.unjudged)),
        SummaryLine("Win rate", rate_text(said.win_rate)),
    ]
    delta = said.cost_delta
    if delta is not None:
        lines.append(SummaryLine("Cost delta", f"{'+' if delta >= 0 else '-'}${abs(delta):.4f}"))
    lines += [SummaryLine(f"Passes {e.name}", rate_text(e.candidate)) for e in said.evaluators]
    rows: list[MetricRow] = []
    for metric in METRICS:
        base = said.metrics.get("baseline", {}).get(metric)
        cand = said.metrics.get("candidate", {}).get(metric)
        if (base and base.count) or (cand and cand.count):
            rows.append(MetricRow(METRIC_LABELS[metric], _mean(metric, base), _mean(metric, cand)))
    return SummaryView(lines, rows)


def _mean(metric: str, figures: MetricSummary | None) -> str:
    if figures is None:
        return NO_VALUE
    return f"{metric_text(metric, figures.mean)} / {metric_text(metric, figures.p95)}"


def picker_choices(experiments: Sequence[Experiment]) -> list[tuple[str, str]]:
    """(id, label) of each experiment for the pickers: its name, model and when it began."""
    return [
        (e.id, f"{e.name} · {e.model or e.generator} · {e.created_at:%Y-%m-%d}")
        for e in experiments
    ]


def candidate_text(experiment: Experiment) -> str:
    """The experiment's candidate in words: generator, model, system prompt."""
    parts = [experiment.generator]
    if experiment.model:
        parts.append(experiment.model)
    if experiment.system_prompt:
        parts.append(f"system prompt ({experiment.system_prompt_mode})")
    return " · ".join(parts)


def query_of(pairs: Mapping[str, str] | Sequence[tuple[str, str]]) -> str:
    """A query string of pairs ("" for none)."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    return urlencode(items)
