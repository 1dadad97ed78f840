"""Reads of an experiment's results (issue 29): its rows (one per item: the baseline and the
candidate answers side by side, their metrics, evaluations and verdicts), filtered, sorted
and paged in the database; the summary over every finished item (wins, losses and ties,
each metric's mean, p50 and p95 per side, the cost delta, evaluator pass rates, with 95 %
confidence intervals for the rates); and two experiments on the same threads matched fork
point by fork point."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import F, FloatField, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from transcripts.errors import InvalidInput
from transcripts.ids import to_uuid, ulid_of
from transcripts.models import (
    Experiment,
    ExperimentItem,
    ItemStatus,
    Message,
    Run,
    Thread,
)

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
# The metrics of each side, as stored in baseline_metrics / candidate_metrics.
METRICS = ("tokensIn", "tokensOut", "latencyMs", "ttftMs", "cost", "length")
SIDES = ("baseline", "candidate")
# Sort keys: the item's own columns, and "<side>-<metric>" for each side and metric.
_COLUMNS = {"position": "position", "status": "status", "outcome": "outcome", "title": "thread"}
SORTS = (*_COLUMNS, *(f"{side}-{metric}" for side in SIDES for metric in METRICS))
OUTCOMES = ("win", "loss", "tie", "unjudged")


# --- rows -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultFilter:
    """What the results page (and the API's results) keep and in which order: disagreements
    only, one status, one outcome, threads with a tag, items whose candidate failed an
    evaluator; sorted by one of SORTS (a leading "-": descending)."""

    disagreements: bool = False
    status: str = ""
    outcome: str = ""
    tag: str = ""
    failing: str = ""
    sort: str = "position"
    # False for a reader who may not see hidden threads: their items are left out.
    sees_hidden: bool = True

    @property
    def sort_key(self) -> str:
        """The sort without its direction."""
        return self.sort.removeprefix("-")

    @property
    def descending(self) -> bool:
        """Whether the sort is descending."""
        return self.sort.startswith("-")


def parse_result_filter(params: Mapping[str, str]) -> ResultFilter:
    """The results' filter from a query string; InvalidInput names what is wrong."""
    status = params.get("status", "").strip()
    if status and status not in ItemStatus.values:
        raise InvalidInput(f"status must be one of {', '.join(ItemStatus.values)}", field="status")
    outcome = params.get("outcome", "").strip()
    if outcome and outcome not in OUTCOMES:
        raise InvalidInput(f"outcome must be one of {', '.join(OUTCOMES)}", field="outcome")
    sort = params.get("sort", "").strip() or "position"
    if sort.removeprefix("-") not in SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(SORTS)}", field="sort")
    tag = " ".join(params.get("tag", "").split())
    failing = params.get("failing", "").strip()
    if len(tag) > 40 or len(failing) > 100:
        raise InvalidInput("tag or failing is too long", field="tag")
    return ResultFilter(
        disagreements=params.get("disagreements", "").strip().lower() in ("1", "on", "true", "yes"),
        status=status,
        outcome=outcome,
        tag=tag,
        failing=failing,
        sort=sort,
    )


def _metric(side: str, metric: str) -> Cast:
    """A side's metric as a number (NULL when not known)."""
    return Cast(RawSQL(f"({side}_metrics->>%s)", (metric,)), FloatField())


def _filtered(experiment: Experiment, spec: ResultFilter) -> QuerySet[ExperimentItem]:
    items = ExperimentItem.objects.filter(experiment=experiment)
    if not spec.sees_hidden:
        items = items.exclude(thread__hidden=True)
    if spec.disagreements:
        items = items.filter(disagreement=True)
    if spec.status:
        items = items.filter(status=spec.status)
    if spec.outcome == "unjudged":
        items = items.filter(outcome="")
    elif spec.outcome:
        items = items.filter(outcome=spec.outcome)
    if spec.tag:
        items = items.filter(thread__metadata__tags__contains=[spec.tag])
    if spec.failing:
        items = items.filter(evaluations__contains=[{"name": spec.failing, "passed": False}])
    return items


def _ordered(items: QuerySet[ExperimentItem], spec: ResultFilter) -> QuerySet[ExperimentItem]:
    key = spec.sort_key
    expression: F | Cast
    if key == "title":
        expression = F("thread__title")
    elif key in _COLUMNS:
        expression = F(_COLUMNS[key])
    else:
        side, metric = key.split("-", 1)
        expression = _metric(side, metric)
    ordering = (
        expression.desc(nulls_last=True) if spec.descending else expression.asc(nulls_last=True)
    )
    return items.order_by(ordering, "position")


@dataclass
class ResultRow:
    """One item as the results show it: its thread, fork point, the two answers (message
    rows, in order; the candidate's empty until it is done), its runs and what was measured."""

    item: ExperimentItem
    thread: Thread
    baseline: list[Message] = field(default_factory=list)
    candidate: list[Message] = field(default_factory=list)
    baseline_run: Run | None = None
    candidate_run: Run | None = None

    def metric(self, side: str, name: str) -> float | None:
        """A side's metric (None when not known)."""
        stored = self.item.baseline_metrics if side == "baseline" else self.item.candidate_metrics
        value = stored.get(name) if isinstance(stored, dict) else None
        return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True)
class ResultPage:
    """One page of rows, how many rows the filter keeps, and the page's number and size."""

    rows: list[ResultRow]
    total: int
    page: int
    size: int

    @property
    def pages(self) -> int:
        """How many pages the filter's rows fill (at least 1)."""
        return max(1, math.ceil(self.total / self.size))


def _answers(
    items: Sequence[ExperimentItem],
) -> tuple[dict[str, Message], dict[str, list[Message]]]:
    """The baseline messages by id, and the candidate runs' messages by run, of items."""
    baseline_ids = [i for item in items for i in (item.baseline_ids or [])]
    run_ids = [item.run_id for item in items if item.run_id]
    baseline = {m.id: m for m in Message.objects.filter(pk__in=baseline_ids)}
    candidates: dict[str, list[Message]] = {}
    for message in Message.objects.filter(run_id__in=run_ids).order_by("run_id", "position"):
        candidates.setdefault(str(message.run_id), []).append(message)
    return baseline, candidates


def rows_of(items: Sequence[ExperimentItem]) -> list[ResultRow]:
    """The rows of items (their threads, answers and runs read in a few queries)."""
    threads = Thread.objects.in_bulk([i.thread_id for i in items])
    baseline, candidates = _answers(items)
    run_ids = [r for item in items for r in (item.run_id, item.baseline_run_id) if r]
    runs = Run.objects.defer("snapshot").in_bulk(run_ids)
    rows: list[ResultRow] = []
    for item in items:
        thread = threads.get(item.thread_id)
        if thread is None:
            continue
        rows.append(
            ResultRow(
                item=item,
                thread=thread,
                baseline=[baseline[i] for i in item.baseline_ids or [] if i in baseline],
                candidate=candidates.get(str(item.run_id), []) if item.run_id else [],
                baseline_run=runs.get(item.baseline_run_id) if item.baseline_run_id else None,
                candidate_run=runs.get(item.run_id) if item.run_id else None,
            )
        )
    return rows


def result_page(
    experiment: Experiment, spec: ResultFilter, *, page: int = 1, size: int = PAGE_SIZE
) -> ResultPage:
    """One page of the experiment's rows as spec filters and sorts them."""
    size = max(1, min(size, MAX_PAGE_SIZE))
    filtered = _filtered(experiment, spec)
    total = filtered.count()
    page = max(1, min(page, max(1, math.ceil(total / size))))
    items = list(_ordered(filtered, spec)[(page - 1) * size : page * size])
    return ResultPage(rows_of(items), total, page, size)


def all_rows(
    experiment: Experiment, spec: ResultFilter, *, batch: int = 500
) -> Iterator[ResultRow]:
    """Every row the filter keeps, in its order, read a batch at a time (the exports)."""
    ordered = _ordered(_filtered(experiment, spec), spec)
    start = 0
    while True:
        items = list(ordered[start : start + batch])
        if not items:
            return
        yield from rows_of(items)
        start += batch


def item_by_id(
    experiment: Experiment, item_id: int, *, sees_hidden: bool = True
) -> ExperimentItem | None:
    """The experiment's item with this id (None for another experiment's, junk, or one of a
    hidden thread without sees_hidden)."""
    if not 0 < item_id < 2**63:
        return None
    items = ExperimentItem.objects.filter(experiment=experiment, pk=item_id)
    if not sees_hidden:
        items = items.exclude(thread__hidden=True)
    return items.first()


def next_to_judge(
    experiment: Experiment, spec: ResultFilter, after: int = -1
) -> ExperimentItem | None:
    """The next done item (in the filter's order, after position `after` when sorted by
    position) that has no person's verdict: judge mode's next pair."""
    items = _filtered(experiment, spec).filter(status=ItemStatus.DONE, person_outcome="")
    return items.filter(position__gt=after).order_by("position").first() or (
        items.order_by("position").first() if after >= 0 else None
    )


# --- the summary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    """A share with its Wilson 95 % confidence interval."""

    hits: int
    total: int

    @property
    def value(self) -> float | None:
        """hits / total (None for none)."""
        return self.hits / self.total if self.total else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The Wilson score interval at 95 % (None for none)."""
        if not self.total:
            return None
        z = 1.959964
        n = self.total
        p = self.hits / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class MetricSummary:
    """One metric of one side over the finished items: how many have it, mean, p50, p95, sum."""

    count: int = 0
    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    total: float | None = None


@dataclass(frozen=True)
class EvaluatorSummary:
    """One evaluator's pass rates: the candidate's, and the baseline's when it judges sides."""

    name: str
    candidate: Rate
    baseline: Rate


@dataclass(frozen=True)
class Summary:
    """The summary over an experiment's finished items."""

    wins: int = 0
    losses: int = 0
    ties: int = 0
    unjudged: int = 0
    metrics: dict[str, dict[str, MetricSummary]] = field(default_factory=dict)
    evaluators: list[EvaluatorSummary] = field(default_factory=list)

    @property
    def judged(self) -> int:
        """Items with a verdict."""
        return self.wins + self.losses + self.ties

    @property
    def win_rate(self) -> Rate:
        """Wins among the judged pairs (ties count as not won)."""
        return Rate(self.wins, self.judged)

    @property
    def cost_delta(self) -> float | None:
        """What the candidates cost minus what the baselines cost (None when neither is
        priced)."""
        base = self.metrics.get("baseline", {}).get("cost", MetricSummary())
        cand = self.metrics.get("candidate", {}).get("cost", MetricSummary())
        if base.total is None and cand.total is None:
            return None
        return (cand.total or 0.0) - (base.total or 0.0)


def _metric_sql() -> tuple[str, list[tuple[str, str]]]:
    columns: list[str] = []
    keys: list[tuple[str, str]] = []
    for side in SIDES:
        for metric in METRICS:
            value = f"(({side}_metrics->>'{metric}')::float)"
            columns += [
                f"count({value})",
                f"avg({value})",
                f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {value})",
                f"percentile_cont(0.95) WITHIN GROUP (ORDER BY {value})",
                f"sum({value})",
            ]
            keys.append((side, metric))
    return ", ".join(columns), keys


_EVALUATOR_RATES = """
    SELECT e->>'name',
        count(*) FILTER (WHERE e->>'passed' = 'true'),
        count(*) FILTER (WHERE e->>'passed' IN ('true', 'false')),
        count(*) FILTER (WHERE e->>'baselinePassed' = 'true'),
        count(*) FILTER (WHERE e->>'baselinePassed' IN ('true', 'false'))
    FROM transcripts_experimentitem i, jsonb_array_elements(i.evaluations) e
    WHERE i.experiment_id = %(experiment)s AND i.status = 'done'
        AND jsonb_typeof(i.evaluations) = 'array'
    GROUP BY 1 ORDER BY 1
"""


def summary(experiment: Experiment) -> Summary:
    """The experiment's summary over its finished items (three queries)."""
    params = {"experiment": to_uuid(experiment.id)}
    columns, keys = _metric_sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE outcome = 'win'), count(*) FILTER (WHERE outcome ="
            " 'loss'), count(*) FILTER (WHERE outcome = 'tie'), count(*) FILTER (WHERE outcome"
            " = '' AND status = 'done') FROM transcripts_experimentitem"
            " WHERE experiment_id = %(experiment)s",
            params,
        )
        wins, losses, ties, unjudged = cursor.fetchone() or (0, 0, 0, 0)
        cursor.execute(
            f"SELECT {columns} FROM transcripts_experimentitem"
            " WHERE experiment_id = %(experiment)s AND status = 'done'",
            params,
        )
        figures = cursor.fetchone() or ()
        cursor.execute(_EVALUATOR_RATES, params)
        rates = cursor.fetchall()
    metrics: dict[str, dict[str, MetricSummary]] = {side: {} for side in SIDES}
    for index, (side, metric) in enumerate(keys):
        count, mean, p50, p95, total = figures[index * 5 : index * 5 + 5]
        metrics[side][metric] = MetricSummary(int(count or 0), mean, p50, p95, total)
    evaluators = [
        EvaluatorSummary(str(name), Rate(c_hits, c_total), Rate(b_hits, b_total))
        for name, c_hits, c_total, b_hits, b_total in rates
    ]
    return Summary(int(wins), int(losses), int(ties), int(unjudged), metrics, evaluators)


# --- two experiments ---------------------------------------------------------------------------


@dataclass
class PairedRow:
    """One fork point both experiments answered: the baseline and each one's candidate."""

    first: ResultRow
    second: ResultRow | None


def compared_page(
    first: Experiment,
    second: Experiment,
    *,
    page: int = 1,
    size: int = PAGE_SIZE,
    sees_hidden: bool = True,
) -> tuple[list[PairedRow], int]:
    """A page of the fork points of first (in its order) with second's row at the same fork
    point when it has one; and how many fork points the two share (without sees_hidden,
    those of hidden threads are left out)."""
    size = max(1, min(size, MAX_PAGE_SIZE))
    shared = ExperimentItem.objects.filter(
        experiment=first,
        fork_from_id__in=ExperimentItem.objects.filter(experiment=second).values("fork_from_id"),
    )
    if not sees_hidden:
        shared = shared.exclude(thread__hidden=True)
    total = shared.count()
    page = max(1, min(page, max(1, math.ceil(total / size))))
    items = list(shared.order_by("position")[(page - 1) * size : page * size])
    others = list(
        ExperimentItem.objects.filter(
            experiment=second, fork_from_id__in=[i.fork_from_id for i in items]
        ).order_by("position")
    )
    by_fork = {o.fork_from_id: o for o in reversed(others)}
    first_rows = rows_of(items)
    second_rows = {r.item.fork_from_id: r for r in rows_of(list(by_fork.values()))}
    return [PairedRow(r, second_rows.get(r.item.fork_from_id)) for r in first_rows], total


def outcome_label(outcome: str) -> str:
    """An outcome in words."""
    labels = {"win": "candidate better", "loss": "baseline better", "tie": "tie"}
    return labels.get(outcome, "not judged")


def judge_progress(experiment: Experiment, spec: ResultFilter) -> tuple[int, int]:
    """Judge mode's progress under the filter: how many done pairs carry a person's verdict,
    and how many done pairs there are."""
    done = _filtered(experiment, spec).filter(status=ItemStatus.DONE)
    return done.exclude(person_outcome="").count(), done.count()


# --- the web pages (issue 29, the experiments pages) -----------------------------------------


@dataclass(frozen=True)
class ListCounts:
    """One experiment's figures on the project's list: items by where they stand, verdicts."""

    total: int = 0
    finished: int = 0
    failed: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0


def list_counts(experiments: Sequence[Experiment]) -> dict[str, ListCounts]:
    """experiment id -> its counts, for every experiment given (one query)."""
    if not experiments:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT experiment_id, count(*),"
            " count(*) FILTER (WHERE status IN ('done', 'failed', 'cancelled')),"
            " count(*) FILTER (WHERE status = 'failed'),"
            " count(*) FILTER (WHERE outcome = 'win'), count(*) FILTER (WHERE outcome = 'loss'),"
            " count(*) FILTER (WHERE outcome = 'tie')"
            " FROM transcripts_experimentitem WHERE experiment_id = ANY(%(ids)s)"
            " GROUP BY experiment_id",
            {"ids": [to_uuid(e.id) for e in experiments]},
        )
        rows = cursor.fetchall()
    return {ulid_of(row[0]): ListCounts(*(int(n) for n in row[1:])) for row in rows}


def _messages(rows: Iterable[ResultRow]) -> Iterable[Message]:
    for row in rows:
        yield from row.baseline
        yield from row.candidate


def attach_runs(rows: Sequence[ResultRow], extra: Sequence[Message] = ()) -> None:
    """Give every message of rows (and extra) its run, read in one query for those the rows
    do not hold already."""
    known: dict[str, Run] = {}
    for row in rows:
        for run in (row.baseline_run, row.candidate_run):
            if run is not None:
                known[run.id] = run
    messages = [*_messages(rows), *extra]
    missing = {m.run_id for m in messages if m.run_id not in known}
    if missing:
        known.update(Run.objects.defer("snapshot").in_bulk(list(missing)))
    for message in messages:
        run = known.get(message.run_id)
        if run is not None:
            message.run = run
