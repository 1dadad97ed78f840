"""Reads of experiments (issue 29): the fork points and baselines of a set of threads, an
experiment's progress, the items whose run has closed, and the two answers of an item.

The results page's rows and summary are read in `selectors/experiment_results.py`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection

from transcripts.ids import is_ulid, to_uuid, ulid_of
from transcripts.jsonvalue import JsonObject, input_tokens, output_tokens
from transcripts.models import (
    ITEM_IN_FLIGHT,
    OPEN_STATUSES,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ForkRule,
    ItemStatus,
    Message,
    Project,
    QueueItem,
    Run,
    ScoreConfig,
)
from transcripts.selectors.paths import path_to
from transcripts.selectors.stats import cost_of

MAX_ROW_ID = 2**63 - 1


# --- fork points -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ForkPoint:
    """Where an item forks a thread: the message its candidate answers, and the baseline
    answer there (the messages after it on the active path up to the next user message)."""

    thread_id: str
    fork_id: str
    baseline_ids: tuple[str, ...] = ()
    baseline_run_id: str | None = None


_ACTIVE_USER_MESSAGES = """
    SELECT thread_id, id, depth FROM transcripts_message
    WHERE thread_id = ANY(%(threads)s) AND active AND role = 'user'
    ORDER BY thread_id, depth
"""

# The messages after each fork on the active path: (thread, depth) pairs in, rows out.
_AFTER = """
    SELECT m.thread_id, m.id, m.depth, m.role, m.run_id
    FROM unnest(%(threads)s::uuid[], %(depths)s::int[]) AS f(thread_id, depth)
    JOIN transcripts_message m ON m.thread_id = f.thread_id AND m.active AND m.depth > f.depth
    ORDER BY m.thread_id, m.depth
"""


def _user_turns(thread_ids: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    """thread id -> its active user messages (id, depth), top down."""
    turns: dict[str, list[tuple[str, int]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_ACTIVE_USER_MESSAGES, {"threads": [to_uuid(t) for t in thread_ids]})
        for thread, message, depth in cursor.fetchall():
            turns.setdefault(ulid_of(thread), []).append((ulid_of(message), depth))
    return turns


def _answers_after(
    forks: dict[str, list[tuple[str, int]]],
) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """fork message id -> (the ids of the answer after it on the active path, the run of the
    first), for forks that are active messages (thread -> [(fork id, depth)], top down)."""
    threads = list(forks)
    if not threads:
        return {}
    shallowest = [min(depth for _, depth in forks[t]) for t in threads]
    below: dict[str, list[tuple[str, int, str, str]]] = {}
    with connection.cursor() as cursor:
        cursor.execute(_AFTER, {"threads": [to_uuid(t) for t in threads], "depths": shallowest})
        for thread, message, depth, role, run in cursor.fetchall():
            below.setdefault(ulid_of(thread), []).append(
                (ulid_of(message), depth, role, ulid_of(run))
            )
    answers: dict[str, tuple[tuple[str, ...], str | None]] = {}
    for thread, points in forks.items():
        rows = below.get(thread, [])
        for fork_id, fork_depth in points:
            ids: list[str] = []
            first_run: str | None = None
            for message, depth, role, run in rows:
                if depth <= fork_depth:
                    continue
                if role == "user":
                    break
                ids.append(message)
                first_run = first_run or run
            answers[fork_id] = (tuple(ids), first_run)
    return answers


def _answer_off_path(fork: Message) -> tuple[tuple[str, ...], str | None]:
    """The answer below a fork message that is not on the active path: its most recent
    children, down to the next user message."""
    ids: list[str] = []
    first_run: str | None = None
    current = fork
    while True:
        child = (
            Message.objects.filter(parent_id=current.id, thread_id=fork.thread_id)
            .order_by("-created_at", "-id")
            .only("id", "role", "run_id", "thread_id")
            .first()
        )
        if child is None or child.role == "user":
            return tuple(ids), first_run
        ids.append(child.id)
        first_run = first_run or child.run_id
        current = child


def fork_points(thread_ids: Sequence[str], rule: str) -> list[ForkPoint]:
    """The fork points of the threads under rule `last-user` (each thread's last user message
    on its active path) or `each-user` (every one), in the threads' order; a thread without a
    user message has none."""
    turns = _user_turns(thread_ids)
    chosen: dict[str, list[tuple[str, int]]] = {}
    for thread in thread_ids:
        points = turns.get(thread, [])
        if points:
            chosen[thread] = points if rule == ForkRule.EACH_USER else [points[-1]]
    answers = _answers_after(chosen)
    return [
        ForkPoint(thread, fork, *answers.get(fork, ((), None)))
        for thread in thread_ids
        for fork, _ in chosen.get(thread, [])
    ]


def fork_points_at(messages: dict[str, str]) -> list[ForkPoint]:
    """The fork points of rule `message` (message id -> its thread's id): a user message is
    answered again, an assistant's (or a tool's) regenerated from its parent's answer."""
    rows = {
        m.id: m
        for m in Message.objects.filter(pk__in=list(messages)).only(
            "id", "thread_id", "parent_id", "role", "depth", "active", "run_id"
        )
    }
    points: list[ForkPoint] = []
    for message_id, thread_id in messages.items():
        message = rows[message_id]
        if message.role != "user" and message.parent_id:
            fork = Message.objects.only("id", "thread_id", "depth", "active").get(
                pk=message.parent_id
            )
        else:
            fork = message
        if fork.active:
            ids, run = _answers_after({thread_id: [(fork.id, fork.depth)]}).get(fork.id, ((), None))
        else:
            ids, run = _answer_off_path(fork)
        points.append(ForkPoint(thread_id, fork.id, ids, run))
    return points


def queue_thread_ids(project: Project, queue_id: int) -> list[str] | None:
    """The threads of a queue of project, oldest item first (None: no such queue)."""
    if not 0 < queue_id <= MAX_ROW_ID or not project.queues.filter(pk=queue_id).exists():
        return None
    rows = QueueItem.objects.filter(queue_id=queue_id).order_by("id").values_list("thread_id")
    return list(dict.fromkeys(str(t) for (t,) in rows))


# --- experiments -----------------------------------------------------------------------------


def experiment_in(project: Project, experiment_id: str) -> Experiment | None:
    """The experiment of project with this id (None for another project's, or junk)."""
    if not is_ulid(experiment_id):
        return None
    return Experiment.objects.filter(project=project, pk=experiment_id).first()


def experiment_by_id(experiment_id: str) -> Experiment | None:
    """The experiment with this id, in any project (None for junk)."""
    if not is_ulid(experiment_id):
        return None
    return Experiment.objects.select_related("project").filter(pk=experiment_id).first()


def experiments_of(project: Project) -> list[Experiment]:
    """The project's experiments, newest first."""
    return list(Experiment.objects.filter(project=project).order_by("-created_at"))


def by_idempotency_key(project: Project, key: str) -> Experiment | None:
    """The project's experiment made with this Idempotency-Key."""
    return Experiment.objects.filter(project=project, idempotency_key=key).first()


@dataclass(frozen=True)
class Progress:
    """How far an experiment is: its items by status."""

    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Every item."""
        return sum(self.counts.values())

    @property
    def finished(self) -> int:
        """Items that will not change any more (done, failed or cancelled)."""
        return sum(
            self.counts.get(s, 0)
            for s in (ItemStatus.DONE, ItemStatus.FAILED, ItemStatus.CANCELLED)
        )

    def as_json(self) -> dict[str, int]:
        """Counts of every status (0 for none), and the total."""
        return {**{s.value: self.counts.get(s.value, 0) for s in ItemStatus}, "total": self.total}


def progress(experiment: Experiment) -> Progress:
    """The experiment's items counted by status."""
    rows = ExperimentItem.objects.filter(experiment=experiment).values_list("status").order_by()
    return Progress(dict(Counter(status for (status,) in rows)))


def running_experiment_ids() -> list[str]:
    """The experiments whose items are being started (the sweeper's list)."""
    return [
        str(i)
        for i in Experiment.objects.filter(status=ExperimentStatus.RUNNING).values_list(
            "id", flat=True
        )
    ]


def experiments_in_flight() -> list[str]:
    """The experiments with an item queued or running."""
    rows = (
        ExperimentItem.objects.filter(status__in=ITEM_IN_FLIGHT)
        .values_list("experiment_id", flat=True)
        .distinct()
    )
    return [str(i) for i in rows]


def items_with_closed_runs(experiment_id: str, *, closed_before: datetime) -> list[str]:
    """Runs of the experiment's in-flight items that closed before closed_before without the
    item being finished (its worker died after the run closed): the sweeper finishes them."""
    rows = ExperimentItem.objects.filter(
        experiment_id=experiment_id, status__in=ITEM_IN_FLIGHT, run__isnull=False
    ).values_list("run_id", flat=True)
    run_ids = [str(r) for r in rows]
    if not run_ids:
        return []
    closed = Run.objects.filter(pk__in=run_ids, finished_at__lt=closed_before).exclude(
        status__in=OPEN_STATUSES
    )
    return [str(r) for r in closed.values_list("id", flat=True)]


def item_of_run(run_id: str) -> ExperimentItem | None:
    """The experiment item whose candidate is this run."""
    return ExperimentItem.objects.select_related("experiment").filter(run_id=run_id).first()


# --- the two answers of an item ---------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """What an item's evaluators read: the conversation up to the fork point, the baseline's
    messages and the candidate's (canonical dicts), and the rows they came from."""

    prompt: list[JsonObject]
    baseline: list[Message]
    candidate: list[Message]


def pair_of(item: ExperimentItem) -> Pair:
    """The item's prompt and two answers (the candidate's: its run's stored messages)."""
    prompt: list[JsonObject] = []
    if item.fork_from_id:
        fork = Message.objects.filter(pk=item.fork_from_id).first()
        if fork is not None:
            prompt = [m.as_canonical() for m in path_to(fork)]
    found = {m.id: m for m in Message.objects.filter(pk__in=list(item.baseline_ids or []))}
    baseline = [found[i] for i in item.baseline_ids or [] if i in found]
    candidate = (
        list(Message.objects.filter(run_id=item.run_id).order_by("position")) if item.run_id else []
    )
    return Pair(prompt, baseline, candidate)


def runs_by_id(run_ids: Sequence[str]) -> dict[str, Run]:
    """The runs with these ids."""
    return {r.id: r for r in Run.objects.filter(pk__in=[i for i in run_ids if i])}


# --- metrics of one side ----------------------------------------------------------------------


def answer_text(messages: Sequence[Message]) -> str:
    """The text parts of the assistant messages of an answer, joined."""
    return "".join(
        str(p.get("text", ""))
        for m in messages
        if m.role == "assistant"
        for p in m.parts
        if isinstance(p, dict) and p.get("type") == "text"
    )


def side_metrics(messages: Sequence[Message], run: Run | None, fork_id: str | None) -> JsonObject:
    """An answer's tokens (its messages' usage, else its run's when the run made just this
    answer), latency and time to first token (of a run forked at the fork point), cost (at
    the model's price) and length in characters; a figure not known is absent."""
    metrics: JsonObject = {"length": len(answer_text(messages))}
    own_run = run is not None and run.fork_from_id == fork_id
    tokens_in = [input_tokens(m.metadata.get("usage")) for m in messages]
    tokens_out = [output_tokens(m.metadata.get("usage")) for m in messages]
    got_in = [t for t in tokens_in if t is not None]
    got_out = [t for t in tokens_out if t is not None]
    if (not got_in and not got_out) and own_run and run is not None:
        got_in = [t for t in [input_tokens(run.usage)] if t is not None]
        got_out = [t for t in [output_tokens(run.usage)] if t is not None]
    if got_in:
        metrics["tokensIn"] = sum(got_in)
    if got_out:
        metrics["tokensOut"] = sum(got_out)
    model = (run.model if run is not None else "") or next(
        (str(m.metadata.get("model")) for m in messages if m.metadata.get("model")), ""
    )
    if model:
        metrics["model"] = model
        cost = cost_of(model, sum(got_in), sum(got_out)) if (got_in or got_out) else None
        if cost is not None:
            metrics["cost"] = round(cost, 8)
    if own_run and run is not None:
        start = run.started_at or run.created_at
        if run.finished_at and start and run.finished_at > start:
            metrics["latencyMs"] = round((run.finished_at - start).total_seconds() * 1000, 1)
        if run.first_event_at and start and run.first_event_at >= start:
            metrics["ttftMs"] = round((run.first_event_at - start).total_seconds() * 1000, 1)
    return metrics


def experiment_of_run(run: Run) -> Experiment | None:
    """The experiment a candidate run was made for (None for any other run)."""
    experiment_id = run.metadata.get("experiment") if isinstance(run.metadata, dict) else None
    if not isinstance(experiment_id, str) or not is_ulid(experiment_id):
        return None
    return (
        Experiment.objects.select_related("project")
        .filter(pk=experiment_id, project_id=run.thread.project_id)
        .first()
    )


def live_configs(project_id: int, names: Collection[str]) -> dict[str, ScoreConfig]:
    """The project's score configs not archived with these names, by name (one query for an
    item's evaluator scores)."""
    rows = ScoreConfig.objects.filter(project_id=project_id, name__in=list(names))
    return {c.name: c for c in rows.filter(archived_at__isnull=True)}
