"""Experiments (issue 29): replay many conversations against another generator, model or
system prompt, each answer a branch beside the original, judged side by side.

`create` checks a request (the candidate can run here, the threads exist and are at most
10,000, the fork messages are in their threads), resolves its threads (a saved thread-list
filter, a tag, a queue's items, ids) to fork points, and makes the experiment through the
ledger; `dispatch` starts its next items (within its concurrency) and queues a
`generate_candidate` task for each; that task generates the run on a worker (the candidate is
committed beside the active path), measures and evaluates the pair, finishes the item and
starts the next. The worker's sweeper calls `sweep`, which finishes items whose worker died
after their run closed and keeps every running experiment going, so an experiment survives
worker and database restarts; an item is never generated twice (its row is locked while its
run is begun or finished, and a run cut off is retried as a new run of the same item).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.utils import timezone
from django_tasks import task

from transcripts.errors import InvalidInput
from transcripts.generation.evaluators import check_evaluators, evaluate_pair
from transcripts.generation.generators import EXTERNAL, GENERATORS, get_generator
from transcripts.generation.generators import unavailable_reason as generator_unavailable
from transcripts.generation.runner import generate
from transcripts.generation.tasks import _clean_parameters
from transcripts.ids import is_ulid
from transcripts.jsonvalue import JsonObject
from transcripts.ledger import experiments as ledger
from transcripts.ledger.experiments import (
    MAX_THREADS,
    Candidate,
    EvaluatorScore,
    ItemResult,
    NewExperiment,
)
from transcripts.ledger.scores import Author
from transcripts.models import (
    ITEM_IN_FLIGHT,
    Experiment,
    ExperimentItem,
    ForkRule,
    Message,
    Project,
    Run,
    RunStatus,
    Thread,
)
from transcripts.permissions import readable_threads
from transcripts.selectors.experiments import (
    ForkPoint,
    by_idempotency_key,
    experiments_in_flight,
    fork_points,
    fork_points_at,
    item_of_run,
    items_with_closed_runs,
    pair_of,
    queue_thread_ids,
    running_experiment_ids,
    runs_by_id,
    side_metrics,
)
from transcripts.selectors.queues import parse_thread_filter, readable_ids, threads_matching

logger = logging.getLogger(__name__)

# How long a closed run may wait for its own worker to finish its item before the sweeper
# does it.
FINISH_GRACE = timedelta(seconds=10)


@dataclass(frozen=True)
class ExperimentRequest:
    """An experiment as a page, the API or the command asks for it, before its checks.

    Threads come from any of: a thread-list query string (filter), a tag, an annotation queue
    (queue_id), thread ids; with the fork rule "message", forks maps each thread id to the
    message to answer again (a user message) or regenerate (an assistant's).
    """

    name: str
    generator: str = "demo"
    model: str = ""
    parameters: Mapping[str, object] = field(default_factory=dict)
    system_prompt: str = ""
    system_prompt_mode: str = "replace"
    fork_rule: str = ForkRule.LAST_USER
    filter: str = ""
    tag: str = ""
    queue_id: int | None = None
    thread_ids: tuple[str, ...] = ()
    forks: Mapping[str, str] = field(default_factory=dict)
    evaluators: object = None
    description: str = ""
    concurrency: int = 4
    idempotency_key: str = ""


def _candidate(request: ExperimentRequest) -> Candidate:
    """The candidate, once its generator can run here and knows its model."""
    name = request.generator
    if name == EXTERNAL:
        raise InvalidInput(
            "experiments run on this server's workers: choose the demo or openai generator",
            field="generator",
        )
    if name not in GENERATORS:
        raise InvalidInput(f"unknown generator {name!r}", field="generator")
    reason = generator_unavailable(name)
    if reason:
        raise InvalidInput(
            f"the {name} generator can't run on this server: {reason}", field="generator"
        )
    generator = get_generator(name)
    model = request.model.strip() or generator.default_model()
    if model not in generator.models():
        raise InvalidInput(
            f"unknown model {model!r} for the {name} generator; expected one of "
            f"{', '.join(generator.models())}",
            field="model",
        )
    return Candidate(
        generator=name,
        model=model,
        parameters=_clean_parameters(request.parameters),
        system_prompt=request.system_prompt,
        system_prompt_mode=request.system_prompt_mode or "replace",
    )


def _thread_ids(project: Project, author: Author, request: ExperimentRequest) -> list[str]:
    """The threads request names, readable by the author, in order, at most MAX_THREADS (one
    more is refused); unknown ids are refused by name."""
    readable = (
        readable_threads(author.user, project=project)
        if author.user is not None
        else Thread.objects.filter(project=project)
    )
    ids: list[str] = []
    asked = list(dict.fromkeys([*request.thread_ids, *request.forks]))
    if len(asked) > MAX_THREADS:
        raise InvalidInput(f"an experiment takes at most {MAX_THREADS:,} threads", field="threads")
    found = readable_ids(readable, asked)
    for thread_id in asked:
        if thread_id not in found:
            raise InvalidInput(f"threadIds: no thread {thread_id} in this project", field="threads")
    ids += asked
    if request.filter.strip() or request.tag.strip():
        spec = parse_thread_filter(request.filter)
        if request.tag.strip():
            spec = replace(spec, tag=" ".join(request.tag.split()))
        ids += threads_matching(readable, spec, MAX_THREADS + 1)
    if request.queue_id is not None:
        queued = queue_thread_ids(project, request.queue_id)
        if queued is None:
            raise InvalidInput("queue: no such queue in this project", field="queue")
        ids += [t for t in queued if t in readable_ids(readable, queued)]
    ids = list(dict.fromkeys(ids))
    if len(ids) > MAX_THREADS:
        raise InvalidInput(
            f"an experiment takes at most {MAX_THREADS:,} threads: narrow the filter",
            field="threads",
        )
    return ids


def _points(thread_ids: list[str], request: ExperimentRequest) -> list[ForkPoint]:
    if request.fork_rule != ForkRule.MESSAGE:
        return fork_points(thread_ids, request.fork_rule)
    if not request.forks or set(request.forks) != set(thread_ids):
        raise InvalidInput(
            "forkRule message: give one message for each thread (forks: threadId -> messageId)",
            field="forks",
        )
    messages = {m: t for t, m in request.forks.items()}
    found = dict(
        Message.objects.filter(pk__in=[m for m in messages if is_ulid(m)]).values_list(
            "id", "thread_id"
        )
    )
    for message_id, thread_id in messages.items():
        if str(found.get(message_id, "")) != thread_id:
            raise InvalidInput(
                f"forks: message {message_id} is not in thread {thread_id}", field="forks"
            )
    return fork_points_at(messages)


def _source(request: ExperimentRequest) -> JsonObject:
    source: JsonObject = {}
    if request.filter.strip():
        source["filter"] = request.filter.strip()
    if request.tag.strip():
        source["tag"] = request.tag.strip()
    if request.queue_id is not None:
        source["queue"] = request.queue_id
    if request.thread_ids or request.forks:
        source["threadIds"] = len(set(request.thread_ids) | set(request.forks))
    return source


def create(
    *, project: Project, author: Author, request: ExperimentRequest
) -> tuple[Experiment, bool]:
    """Make the experiment request asks for and start its first items once it commits; a
    repeated Idempotency-Key returns the first experiment (created False). Bad input is an
    InvalidInput and nothing is written or queued."""
    ledger.require_editor(author, project)
    key = request.idempotency_key.strip()
    if key:
        existing = by_idempotency_key(project, key)
        if existing is not None:
            return existing, False
    if request.fork_rule not in ForkRule.values:
        raise InvalidInput(
            f"forkRule must be one of {', '.join(ForkRule.values)}", field="forkRule"
        )
    candidate = _candidate(request)
    evaluators = check_evaluators(request.evaluators)
    thread_ids = _thread_ids(project, author, request)
    if not thread_ids:
        raise InvalidInput("no thread matches: the set of threads is empty", field="threads")
    points = _points(thread_ids, request)
    spec = NewExperiment(
        name=request.name, fork_rule=request.fork_rule, candidate=candidate, points=points,
        thread_count=len(thread_ids), source=_source(request), evaluators=evaluators,
        description=request.description, concurrency=request.concurrency, idempotency_key=key,
    )  # fmt: skip
    with transaction.atomic():
        experiment, created = ledger.create_experiment(project=project, author=author, spec=spec)
        if created:
            transaction.on_commit(lambda: dispatch(experiment.id))
    return experiment, created


# --- running -----------------------------------------------------------------------------------


def dispatch(experiment_id: str) -> list[str]:
    """Start the experiment's next items and queue a task for each (after the commit when
    called inside a transaction); the runs begun."""
    started = ledger.start_items(experiment_id)
    for run_id in started:
        transaction.on_commit(partial(generate_candidate.enqueue, run_id))
    return started


def pair_result(item: ExperimentItem, runs: Mapping[str, Run] | None = None) -> ItemResult:
    """Measure and evaluate an item whose candidate committed (runs: its candidate and
    baseline runs by id, when the caller read them already)."""
    pair = pair_of(item)
    if runs is None:
        runs = runs_by_id([item.run_id or "", item.baseline_run_id or ""])
    candidate_run = runs.get(item.run_id or "")
    baseline_run = runs.get(item.baseline_run_id or "")
    experiment = item.experiment
    evaluated = evaluate_pair(
        experiment.evaluators,
        prompt=pair.prompt,
        baseline=[m.as_canonical() for m in pair.baseline],
        candidate=[m.as_canonical() for m in pair.candidate],
        seed=item.run_id or str(item.pk),
    )
    scores: list[EvaluatorScore] = []
    last = {
        "baseline": next((m.id for m in reversed(pair.baseline) if m.role == "assistant"), None),
        "candidate": next((m.id for m in reversed(pair.candidate) if m.role == "assistant"), None),
    }
    for result in evaluated.results:
        for side in ("baseline", "candidate"):
            value = result.get(side)
            message_id = last[side]
            if message_id and isinstance(value, int | float) and not isinstance(value, bool):
                detail = str(result.get("detail") or "")
                scores.append(
                    EvaluatorScore(message_id, str(result.get("name")), float(value), detail)
                )
    return ItemResult(
        baseline_metrics=side_metrics(pair.baseline, baseline_run, item.fork_from_id),
        candidate_metrics=side_metrics(pair.candidate, candidate_run, item.fork_from_id),
        evaluations=evaluated.results,
        judge_outcome=evaluated.verdict,
        disagreement=evaluated.disagreement,
        scores=scores,
    )


def finish(run_id: str, item: ExperimentItem | None = None) -> ExperimentItem | None:
    """Finish the item of this closed run (evaluated when its run committed); item: the run's
    item when the caller read it already."""
    item = item or item_of_run(run_id)
    if item is None or item.status not in ITEM_IN_FLIGHT:
        return None
    runs = runs_by_id([run_id, item.baseline_run_id or ""])
    run = runs.get(run_id)
    if run is None or run.is_open:
        return None
    result = None
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED):
        try:
            result = pair_result(item, runs)
        except Exception as exc:  # an evaluator's bug must not stall the experiment
            logger.exception("evaluating item %s of experiment %s", item.pk, item.experiment_id)
            result = ItemResult(evaluations=[{"name": "error", "detail": str(exc)}])
    return ledger.finish_item(run_id, result)


@task(queue_name="generation")
def generate_candidate(run_id: str) -> str:
    """Generate one candidate run, finish its item and start the experiment's next items."""
    ledger.mark_running(run_id)
    status = generate(run_id)
    item = item_of_run(run_id)
    if item is not None:
        finish(run_id, item)
        dispatch(item.experiment_id)
    return status


def sweep() -> list[str]:
    """Keep experiments going after a restart: finish the items whose run closed without its
    worker finishing them, and start the next items of every running experiment. The ids of
    the runs finished or begun."""
    done: list[str] = []
    closed_before = timezone.now() - FINISH_GRACE
    for experiment_id in experiments_in_flight():
        for run_id in items_with_closed_runs(experiment_id, closed_before=closed_before):
            if finish(run_id) is not None:
                done.append(run_id)
    for experiment_id in running_experiment_ids():
        done += dispatch(experiment_id)
    return done


# --- the rest of the life of an experiment -----------------------------------------------------


def resume(*, experiment: Experiment, author: Author) -> Experiment:
    """Resume a paused experiment and start its next items."""
    experiment = ledger.resume_experiment(experiment=experiment, author=author)
    dispatch(experiment.id)
    return experiment
