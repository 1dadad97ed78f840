"""Experiments (issue 29): a candidate replayed on many threads, each answer a branch beside
the original at the fork point chosen when the experiment was made.

The writes: making an experiment and its items (all or nothing, once per Idempotency-Key),
starting the next items within its concurrency limit (each a queued run marked with the
experiment, which `commit_run` keeps off the active path), finishing an item once its run
closes (metrics, evaluator results, evaluator scores; a run a dead worker or an outage cut
off is tried again, at most three times), pause/resume/cancel, a person's verdict on a pair
(the preference rating Compare writes), adopting candidates and discarding them. Every
person's action is audited. The service that queues the runs' tasks is
`transcripts.generation.experiments`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from transcripts.errors import Conflict, DomainError, InvalidInput
from transcripts.ledger.audit import record_audit
from transcripts.ledger.counters import refresh_counters
from transcripts.ledger.deletion import delete_runs
from transcripts.ledger.lifecycle import cancel_run, restore_run
from transcripts.ledger.ratings import rate_run
from transcripts.ledger.rights import account_of, require
from transcripts.ledger.runs import begin_run
from transcripts.ledger.scores import Author
from transcripts.ledger.storable import check_object, check_storable
from transcripts.models import (
    ITEM_IN_FLIGHT,
    OPEN_STATUSES,
    Experiment,
    ExperimentItem,
    ExperimentStatus,
    ForkRule,
    ItemStatus,
    Message,
    Outcome,
    Project,
    Report,
    Run,
    RunOrigin,
    RunRating,
    RunStatus,
    Score,
    ScoreSource,
    ShareLink,
    Thread,
)
from transcripts.permissions import User, project_access
from transcripts.selectors.experiments import (
    ForkPoint,
    by_idempotency_key,
    live_configs,
    runs_by_id,
)
from transcripts.selectors.scores import scores_need_config

MAX_THREADS = 10_000
MAX_ITEMS = 50_000
MAX_CONCURRENCY = 64
MAX_NAME = 200
MAX_DESCRIPTION = 2000
MAX_KEY = 200
MAX_ATTEMPTS = 3
# Errors of runs cut off by something other than the candidate (a dead worker, an outage):
# the item is tried again with a new run.
RETRYABLE = frozenset({"lease_expired", "database_unavailable", "WorkerLost"})
# A database error a second attempt gets past (the runner fails the run with it in the message).
TRANSIENT = ("deadlock detected", "could not serialize access")
FINISHED = (ItemStatus.DONE, ItemStatus.FAILED, ItemStatus.CANCELLED)


@dataclass(frozen=True)
class Candidate:
    """What answers again: a generator with its model and parameters, and a system prompt
    that replaces the thread's system messages or comes before them ("" for theirs)."""

    generator: str
    model: str = ""
    parameters: Mapping[str, object] = field(default_factory=dict)
    system_prompt: str = ""
    system_prompt_mode: str = "replace"

    def run_parameters(self) -> dict[str, object]:
        """The parameters each candidate run is started with."""
        params = dict(self.parameters)
        if self.system_prompt:
            params["systemPrompt"] = self.system_prompt
            if self.system_prompt_mode == "prefix":
                params["systemPromptMode"] = "prefix"
        return params


@dataclass(frozen=True)
class NewExperiment:
    """An experiment as the service checked it: its fork points (at most MAX_THREADS threads),
    the candidate, the evaluators (checked by the service), and where the threads came from."""

    name: str
    fork_rule: str
    candidate: Candidate
    points: Sequence[ForkPoint]
    thread_count: int
    source: Mapping[str, object] = field(default_factory=dict)
    evaluators: Sequence[Mapping[str, object]] = ()
    description: str = ""
    concurrency: int = 4
    idempotency_key: str = ""


def _text(text: str, *, limit: int, field: str, required: bool = False) -> str:
    text = (text or "").strip()
    if required and not text:
        raise InvalidInput(f"{field} is required", field=field)
    if len(text) > limit:
        raise InvalidInput(f"{field} is longer than {limit} characters", field=field)
    check_storable(text, field)
    return text


def require_editor(author: Author, project: Project) -> None:
    """Refuse a member below editor (a token: the API admitted it by its scopes)."""
    if author.user is not None:
        require(project_access(author.user, project).can_edit, "run experiments")


def _checked(spec: NewExperiment) -> None:
    if spec.fork_rule not in ForkRule.values:
        raise InvalidInput(
            f"forkRule must be one of {', '.join(ForkRule.values)}", field="forkRule"
        )
    if spec.thread_count > MAX_THREADS:
        raise InvalidInput(f"an experiment takes at most {MAX_THREADS:,} threads", field="threads")
    if not spec.points:
        raise InvalidInput(
            "no thread to run: the set is empty, or none has a user message to answer",
            field="threads",
        )
    if len(spec.points) > MAX_ITEMS:
        raise InvalidInput(f"an experiment makes at most {MAX_ITEMS:,} branches", field="threads")
    if not 1 <= spec.concurrency <= MAX_CONCURRENCY:
        raise InvalidInput(
            f"concurrency must be between 1 and {MAX_CONCURRENCY}", field="concurrency"
        )
    if spec.candidate.system_prompt_mode not in ("replace", "prefix"):
        raise InvalidInput("systemPromptMode must be replace or prefix", field="systemPromptMode")


def create_experiment(
    *, project: Project, author: Author, spec: NewExperiment
) -> tuple[Experiment, bool]:
    """The experiment spec asks for, with one pending item per fork point, and whether it is
    new (False: spec's Idempotency-Key made one already, which is returned as it is)."""
    require_editor(author, project)
    key = _text(spec.idempotency_key, limit=MAX_KEY, field="Idempotency-Key")
    if key:
        existing = by_idempotency_key(project, key)
        if existing is not None:
            return existing, False
    _checked(spec)
    name = _text(spec.name, limit=MAX_NAME, field="name", required=True)
    description = _text(spec.description, limit=MAX_DESCRIPTION, field="description")
    system_prompt = _text(spec.candidate.system_prompt, limit=20_000, field="systemPrompt")
    parameters = check_object(spec.candidate.parameters, "parameters")
    evaluators = [check_object(e, "evaluators") for e in spec.evaluators]
    try:
        with transaction.atomic():
            experiment = Experiment.objects.create(
                project=project,
                name=name,
                description=description,
                source=check_object(spec.source, "source"),
                fork_rule=spec.fork_rule,
                generator=spec.candidate.generator,
                model=spec.candidate.model,
                parameters=dict(parameters),
                system_prompt=system_prompt,
                system_prompt_mode=spec.candidate.system_prompt_mode,
                evaluators=evaluators,
                concurrency=spec.concurrency,
                idempotency_key=key,
                created_by=account_of(author.user),
                token_id=author.token_id,
                thread_count=spec.thread_count,
                item_count=len(spec.points),
            )
            ExperimentItem.objects.bulk_create(
                [
                    ExperimentItem(
                        experiment=experiment,
                        position=position,
                        thread_id=point.thread_id,
                        fork_from_id=point.fork_id,
                        baseline_ids=list(point.baseline_ids),
                        baseline_run_id=point.baseline_run_id,
                    )
                    for position, point in enumerate(spec.points)
                ],
                batch_size=2000,
            )
            record_audit(
                author.audited, "create_experiment", project,
                experiment=experiment.id, name=name, items=len(spec.points),
                generator=experiment.generator, model=experiment.model, **author.details(),
            )  # fmt: skip
    except IntegrityError:
        # The same key, made by a concurrent call first.
        existing = by_idempotency_key(project, key) if key else None
        if existing is None:
            raise
        return existing, False
    return experiment, True


# --- running ---------------------------------------------------------------------------------


def _candidate_of(experiment: Experiment) -> Candidate:
    return Candidate(
        generator=experiment.generator,
        model=experiment.model,
        parameters=dict(experiment.parameters),
        system_prompt=experiment.system_prompt,
        system_prompt_mode=experiment.system_prompt_mode,
    )


def _begin_candidate(experiment: Experiment, item: ExperimentItem) -> Run | None:
    """A queued run forked at the item's fork point, marked with the experiment; None (the
    item failed, with why) when the thread can no longer take one."""
    if item.fork_from_id is None:
        item.status = ItemStatus.FAILED
        item.error = {"message": "the fork point was deleted", "code": "fork_point_gone"}
        return None
    try:
        with transaction.atomic():
            run, _ = begin_run(
                thread=Thread(pk=item.thread_id),
                fork_from=item.fork_from_id,
                status=RunStatus.QUEUED,
                generator=experiment.generator,
                model=experiment.model,
                parameters=_candidate_of(experiment).run_parameters(),
                metadata={"experiment": experiment.id, "experimentItem": item.pk},
                origin=RunOrigin.WEB,
                touch=False,
            )
    except (DomainError, Thread.DoesNotExist) as exc:
        item.status = ItemStatus.FAILED
        item.error = {"message": str(exc), "code": type(exc).__name__}
        item.finished_at = timezone.now()
        return None
    item.run = run
    item.status = ItemStatus.QUEUED
    item.attempts += 1
    return run


@transaction.atomic
def start_items(experiment_id: str) -> list[str]:
    """Start the experiment's next pending items, as many as its concurrency leaves room for
    (a running experiment only); complete it when nothing is left. The ids of the runs begun
    (the service queues their tasks once this commits)."""
    experiment = Experiment.objects.select_for_update().filter(pk=experiment_id).first()
    if experiment is None or experiment.status != ExperimentStatus.RUNNING:
        return []
    items = ExperimentItem.objects.filter(experiment=experiment)
    busy = items.filter(status__in=ITEM_IN_FLIGHT).count()
    room = experiment.concurrency - busy
    started: list[str] = []
    if room > 0:
        pending = list(items.filter(status=ItemStatus.PENDING).order_by("position")[:room])
        for item in pending:
            run = _begin_candidate(experiment, item)
            if run is not None:
                started.append(run.id)
        ExperimentItem.objects.bulk_update(
            pending, ["run", "status", "attempts", "error", "finished_at"]
        )
        busy += len(started)
    if not busy and not items.filter(status=ItemStatus.PENDING).exists():
        experiment.status = ExperimentStatus.COMPLETED
        experiment.finished_at = timezone.now()
        experiment.save(update_fields=["status", "finished_at"])
    return started


def mark_running(run_id: str) -> None:
    """The item of this run is being generated (its worker claimed the run)."""
    ExperimentItem.objects.filter(run_id=run_id, status=ItemStatus.QUEUED).update(
        status=ItemStatus.RUNNING
    )


@dataclass(frozen=True)
class EvaluatorScore:
    """A score an evaluator gives one message of a pair (0-1, or a number)."""

    message_id: str
    name: str
    value: float
    comment: str = ""


@dataclass(frozen=True)
class ItemResult:
    """What the service measured of an item whose candidate committed."""

    baseline_metrics: Mapping[str, Any] = field(default_factory=dict)
    candidate_metrics: Mapping[str, Any] = field(default_factory=dict)
    evaluations: Sequence[Mapping[str, Any]] = ()
    judge_outcome: str = ""
    disagreement: bool = False
    scores: Sequence[EvaluatorScore] = ()


def _evaluator_scores(
    item: ExperimentItem, project_id: int, scores: Sequence[EvaluatorScore]
) -> None:
    """Store the evaluator scores (source "evaluator", one per experiment, item, side and
    name: an item finished again updates nothing twice); a name the project requires a
    config for and lacks is left on the item only."""
    if not scores:
        return
    needs_config = scores_need_config(project_id)
    configs = live_configs(project_id, {s.name for s in scores})
    now = timezone.now()
    rows = []
    for score in scores:
        config = configs.get(score.name)
        if config is None and needs_config:
            continue
        rows.append(
            Score(
                project_id=project_id,
                thread_id=item.thread_id,
                message_id=score.message_id,
                name=score.name,
                config=config,
                value=score.value,
                comment=score.comment[:2000],
                source=ScoreSource.EVALUATOR,
                external_id=f"experiment:{item.experiment_id}:{item.pk}:{score.message_id}:"
                f"{score.name}"[:200],
                created_at=now,
                updated_at=now,
            )
        )
    Score.objects.bulk_create(rows, ignore_conflicts=True)


def _retry_or_fail(item: ExperimentItem, experiment: Experiment, run: Run) -> None:
    error = run.error if isinstance(run.error, dict) else {"message": run.status}
    message = str(error.get("message", ""))
    retryable = run.status == RunStatus.FAILED and (
        error.get("code") in RETRYABLE or any(t in message for t in TRANSIENT)
    )
    if (
        retryable
        and item.attempts < MAX_ATTEMPTS
        and experiment.status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED)
    ):
        item.status = ItemStatus.PENDING
        item.error = error
        return
    item.status = (
        ItemStatus.CANCELLED
        if run.status == RunStatus.CANCELLED and experiment.status == ExperimentStatus.CANCELLED
        else ItemStatus.FAILED
    )
    item.error = error
    item.finished_at = timezone.now()


@transaction.atomic
def finish_item(run_id: str, result: ItemResult | None) -> ExperimentItem | None:
    """Finish the item whose candidate is this closed run: done with result (its run
    committed), else pending again (cut off by a dead worker or an outage, fewer than three
    attempts) or failed. None when no in-flight item has this run (finished already)."""
    item = (
        ExperimentItem.objects.select_for_update(of=("self",))
        .select_related("experiment", "run")
        .filter(run_id=run_id, status__in=ITEM_IN_FLIGHT)
        .first()
    )
    if item is None or item.run is None:
        return None
    run, experiment = item.run, item.experiment
    if run.status in OPEN_STATUSES:
        return None
    if run.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED) and result is not None:
        item.status = ItemStatus.DONE
        item.error = None
        item.finished_at = timezone.now()
        item.baseline_metrics = dict(result.baseline_metrics)
        item.candidate_metrics = dict(result.candidate_metrics)
        item.evaluations = [dict(e) for e in result.evaluations]
        item.judge_outcome = result.judge_outcome
        item.disagreement = result.disagreement or bool(
            result.judge_outcome and result.judge_outcome != Outcome.TIE
        )
        item.outcome = item.person_outcome or item.judge_outcome
        _evaluator_scores(item, experiment.project_id, result.scores)
    else:
        _retry_or_fail(item, experiment, run)
    item.save()
    return item


# --- pause, resume, cancel --------------------------------------------------------------------


def _locked(experiment: Experiment) -> Experiment:
    return Experiment.objects.select_for_update().get(pk=experiment.pk)


@transaction.atomic
def pause_experiment(*, experiment: Experiment, author: Author) -> Experiment:
    """No new item starts; the ones started finish. Idempotent."""
    require_editor(author, experiment.project)
    experiment = _locked(experiment)
    if experiment.status == ExperimentStatus.PAUSED:
        return experiment
    if experiment.status != ExperimentStatus.RUNNING:
        raise Conflict(
            f"a {experiment.status} experiment cannot be paused", status=experiment.status
        )
    experiment.status = ExperimentStatus.PAUSED
    experiment.save(update_fields=["status"])
    record_audit(
        author.audited, "pause_experiment", experiment.project,
        experiment=experiment.id, **author.details(),
    )  # fmt: skip
    return experiment


@transaction.atomic
def resume_experiment(*, experiment: Experiment, author: Author) -> Experiment:
    """A paused experiment runs again (the service then starts its next items). Idempotent."""
    require_editor(author, experiment.project)
    experiment = _locked(experiment)
    if experiment.status == ExperimentStatus.RUNNING:
        return experiment
    if experiment.status != ExperimentStatus.PAUSED:
        raise Conflict(
            f"a {experiment.status} experiment cannot be resumed", status=experiment.status
        )
    experiment.status = ExperimentStatus.RUNNING
    experiment.save(update_fields=["status"])
    record_audit(
        author.audited, "resume_experiment", experiment.project,
        experiment=experiment.id, **author.details(),
    )  # fmt: skip
    return experiment


@transaction.atomic
def cancel_experiment(*, experiment: Experiment, author: Author) -> Experiment:
    """Stop the experiment: items not started are cancelled, runs still open are cancelled
    (what they streamed stays in their log); finished items keep their candidates."""
    require_editor(author, experiment.project)
    experiment = _locked(experiment)
    if experiment.status == ExperimentStatus.CANCELLED:
        return experiment
    if experiment.status == ExperimentStatus.COMPLETED:
        raise Conflict("a completed experiment cannot be cancelled", status=experiment.status)
    experiment.status = ExperimentStatus.CANCELLED
    experiment.finished_at = timezone.now()
    experiment.save(update_fields=["status", "finished_at"])
    items = ExperimentItem.objects.filter(experiment=experiment)
    now = timezone.now()
    items.filter(status=ItemStatus.PENDING).update(status=ItemStatus.CANCELLED, finished_at=now)
    open_runs = Run.objects.filter(
        pk__in=items.filter(status__in=ITEM_IN_FLIGHT).values("run_id"),
        status__in=OPEN_STATUSES,
    ).values_list("id", flat=True)
    for run_id in list(open_runs):
        try:
            cancel_run(run=str(run_id))
        except DomainError:  # closed meanwhile: its item finishes as usual
            continue
    items.filter(status__in=ITEM_IN_FLIGHT).exclude(
        run__status__in=[RunStatus.COMMITTED, RunStatus.SUPERSEDED]
    ).update(status=ItemStatus.CANCELLED, finished_at=now)
    record_audit(
        author.audited, "cancel_experiment", experiment.project,
        experiment=experiment.id, **author.details(),
    )  # fmt: skip
    return experiment


# --- verdicts -----------------------------------------------------------------------------------

VERDICTS = {"a": Outcome.LOSS, "b": Outcome.WIN, "t": Outcome.TIE}
TIE_NOTE = "tie (experiment {})"


@transaction.atomic
def judge_item(*, item: ExperimentItem, user: User, verdict: str) -> ExperimentItem:
    """A person's verdict on a pair: "a" the baseline is better, "b" the candidate, "t" a tie.
    Recorded as Compare records it (a preference rating of the better run; a tie rates both
    runs, neither preferred) and on the item, where it outweighs the LLM judge's."""
    outcome = VERDICTS.get(verdict)
    if outcome is None:
        raise InvalidInput("verdict must be a, b or t", field="verdict")
    item = ExperimentItem.objects.select_for_update().get(pk=item.pk)
    if item.status != ItemStatus.DONE or item.run_id is None:
        raise Conflict("this pair has no candidate answer to judge yet", status=item.status)
    runs = runs_by_id([item.run_id, item.baseline_run_id or ""])
    candidate = runs[item.run_id]
    baseline = runs.get(item.baseline_run_id or "")
    if outcome == Outcome.WIN:
        rate_run(user=user, run=candidate, preferred=True)
    elif outcome == Outcome.LOSS:
        if baseline is None:
            raise Conflict("this fork point had no answer to prefer", field="verdict")
        rate_run(user=user, run=baseline, preferred=True)
    else:
        note = TIE_NOTE.format(item.experiment_id)
        for run in (candidate, baseline):
            if run is not None:
                rate_run(user=user, run=run, preferred=False, note=note)
    item.person_outcome = outcome
    item.judged_by = account_of(user)
    item.outcome = outcome
    item.disagreement = item.disagreement or outcome != Outcome.TIE
    item.save(update_fields=["person_outcome", "judged_by", "outcome", "disagreement"])
    return item


# --- adopt and discard ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Adopted:
    """What an adoption did: the candidates made the active answer, and those it could not
    (a locked thread, a candidate deleted), with why."""

    adopted: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)


def adopt(
    *, experiment: Experiment, author: Author, item_ids: Sequence[int] = (), winners: bool = False
) -> Adopted:
    """Make the candidates of the items (or of every item where it won, with winners) the
    active answer of their thread, as Restore does; audited once. Restoring the baseline's
    branch undoes it, thread by thread."""
    require_editor(author, experiment.project)
    items = ExperimentItem.objects.filter(experiment=experiment, status=ItemStatus.DONE)
    if author.user is not None and not project_access(author.user, experiment.project).sees_hidden:
        # A hidden thread is the moderators': nobody else changes its answer.
        items = items.exclude(thread__hidden=True)
    if winners:
        items = items.filter(outcome=Outcome.WIN)
    elif item_ids:
        items = items.filter(pk__in=list(item_ids))
    else:
        raise InvalidInput("choose the items to adopt, or adopt the winners", field="items")
    chosen = list(items.order_by("position").values_list("pk", "run_id"))
    if item_ids and not winners and len(chosen) != len(set(item_ids)):
        raise InvalidInput("items: adopt finished items of this experiment", field="items")
    done = Adopted()
    now = timezone.now()
    for item_id, run_id in chosen:
        try:
            restore_run(run=str(run_id))
        except DomainError as exc:
            done.skipped.append((item_id, str(exc)))
            continue
        done.adopted.append(item_id)
    ExperimentItem.objects.filter(pk__in=done.adopted).update(adopted_at=now)
    record_audit(
        author.audited, "adopt_experiment", experiment.project,
        experiment=experiment.id, adopted=len(done.adopted), skipped=len(done.skipped),
        winners=winners, **author.details(),
    )  # fmt: skip
    return done


@transaction.atomic
def discard(*, experiment: Experiment, author: Author, delete: bool = False) -> int:
    """Discard the experiment's candidates: it stops (if running), and its candidates stay in
    the tree as superseded branches; with delete (a project admin), the candidate runs that
    are not on an active path go with their events, messages, ratings and scores. The number
    of candidates deleted."""
    require_editor(author, experiment.project)
    if delete and author.user is not None:
        require(project_access(author.user, experiment.project).can_administer, "delete candidates")
    experiment = _locked(experiment)
    if experiment.status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED):
        cancel_experiment(experiment=experiment, author=author)
    deleted = _delete_candidates(experiment) if delete else 0
    record_audit(
        author.audited, "discard_experiment", experiment.project,
        experiment=experiment.id, deleted=deleted, **author.details(),
    )  # fmt: skip
    return deleted


def _delete_candidates(experiment: Experiment) -> int:
    """Delete the candidate runs of the experiment nobody built on: not on an active path,
    no message or run of another below theirs, none shared or reported."""
    runs = Run.objects.filter(
        pk__in=ExperimentItem.objects.filter(experiment=experiment, run__isnull=False).values(
            "run_id"
        )
    ).exclude(status__in=OPEN_STATUSES)
    doomed: list[tuple[str, str]] = []
    for run_id, thread_id in runs.values_list("id", "thread_id"):
        messages = Message.objects.filter(run_id=run_id, thread_id=thread_id)
        if messages.filter(active=True).exists():
            continue
        below = Message.objects.filter(
            thread_id=thread_id, parent_id__in=messages.values("id")
        ).exclude(run_id=run_id)
        forked = Run.objects.filter(thread_id=thread_id, fork_from_id__in=messages.values("id"))
        shared = ShareLink.objects.filter(thread_id=thread_id, leaf_id__in=messages.values("id"))
        reported = Report.objects.filter(message_id__in=messages.values("id"))
        if below.exists() or forked.exists() or shared.exists() or reported.exists():
            continue
        doomed.append((str(run_id), str(thread_id)))
    if not doomed:
        return 0
    run_ids = [r for r, _ in doomed]
    thread_ids = sorted({t for _, t in doomed})
    message_ids = Message.objects.filter(run_id__in=run_ids).values("id")
    Score.objects.filter(Q(run_id__in=run_ids) | Q(message_id__in=message_ids)).delete()
    RunRating.objects.filter(run_id__in=run_ids).delete()
    delete_runs(run_ids, thread_ids)
    ExperimentItem.objects.filter(run_id__in=run_ids).update(run=None)
    refresh_counters(thread_ids)
    return len(run_ids)
