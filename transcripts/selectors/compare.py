"""Reads for comparing the branches at a fork point: their runs, messages, projections, ratings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet

from transcripts.errors import InvalidInput
from transcripts.ids import ulid_of
from transcripts.models import OPEN_STATUSES, Event, Message, Run, RunRating, RunStatus, Thread
from transcripts.projector import Projection, Projector
from transcripts.selectors.paths import latest_leaf_below, path_ids_to

# Runs whose messages exist only as events: their branch is a projection, not rows.
UNMATERIALIZED = (RunStatus.FAILED, RunStatus.CANCELLED, *OPEN_STATUSES)


def runs_at_fork_point(thread: Thread, fork_from_id: str | None) -> QuerySet[Run]:
    """Every run that forked from the given message (None: new roots), newest first."""
    return Run.objects.filter(thread=thread, fork_from_id=fork_from_id).order_by("-created_at")


def branch_runs(thread: Thread, fork_point: Message | None) -> list[Run]:
    """Every run with a branch just below fork_point (None: the roots), in one query.

    That is each run that made a child of fork_point (a run may also hold the messages above
    it), and each run forked from it that never materialized (failed, cancelled, still open).
    The runs come without their snapshot, which can be as large as the run, and with
    `on_active_path`: whether their branch is the thread's active one.
    """
    children = Message.objects.filter(run_id=OuterRef("pk"))
    if fork_point is None:
        children = children.filter(parent__isnull=True)
        forked = Q(fork_from__isnull=True)
    else:
        children = children.filter(parent_id=fork_point.id)
        forked = Q(fork_from_id=fork_point.id)
    return list(
        Run.objects.filter(thread=thread)
        .filter(Exists(children) | (forked & Q(status__in=UNMATERIALIZED)))
        .annotate(on_active_path=Exists(children.filter(active=True)))
        .defer("snapshot")
    )


def run_messages(run_ids: Sequence[str], *, below_depth: int = -1) -> dict[str, list[Message]]:
    """The materialized messages of each run deeper than below_depth, in order (one query)."""
    result: dict[str, list[Message]] = {run_id: [] for run_id in run_ids}
    if not run_ids:
        return result
    messages = Message.objects.filter(run_id__in=run_ids, depth__gt=below_depth).order_by(
        "run_id", "position"
    )
    for message in messages:
        result[message.run_id].append(message)
    return result


def run_projections(runs: Sequence[Run]) -> dict[str, Projection]:
    """What each run's events amount to, from one query over all their events.

    Projecting from seq 1 gives what projecting from a snapshot gives (the projector's
    contract), so the snapshots, possibly large, are not loaded.
    """
    projectors = {run.id: Projector(run_id=run.id, parent_id=run.fork_from_id) for run in runs}
    if not projectors:
        return {}
    rows = (
        Event.objects.filter(run_id__in=list(projectors))
        .order_by("run_id", "seq")
        .values_list("run_id", "seq", "kind", "data", "at")
    )
    for run_id, seq, kind, data, at in rows.iterator(chunk_size=2000):
        projectors[ulid_of(run_id)].apply({"seq": seq, "kind": kind, "data": data, "at": at})
    return {run_id: projector.result() for run_id, projector in projectors.items()}


def run_ratings(run_ids: Sequence[str]) -> dict[str, list[RunRating]]:
    """Every rating of the given runs with its user, oldest first (one query)."""
    result: dict[str, list[RunRating]] = {run_id: [] for run_id in run_ids}
    ratings = (
        RunRating.objects.filter(run_id__in=run_ids)
        .select_related("user")
        .order_by("created_at", "id")
    )
    for rating in ratings:
        result[rating.run_id].append(rating)
    return result


def rival_run_ids(run: Run) -> list[str]:
    """Runs with another branch at any fork point where run has one: its rivals."""
    # A run of several messages (a prompt and its answer) has a branch below its own fork
    # point and below each of its messages but the last.
    points = {p for p in run.messages.values_list("parent_id", flat=True) if p is not None}
    if run.fork_from_id is not None:
        points.add(run.fork_from_id)
    children, forked = Q(parent_id__in=points), Q(fork_from_id__in=points)
    if run.fork_from_id is None:  # a run that starts a new root competes with the other roots
        children |= Q(parent__isnull=True)
        forked |= Q(fork_from__isnull=True)
    branch_makers = Message.objects.filter(children, thread_id=run.thread_id).values("run_id")
    rivals = Run.objects.filter(
        Q(pk__in=branch_makers) | (forked & Q(status__in=UNMATERIALIZED)),
        thread_id=run.thread_id,
    ).exclude(pk=run.pk)
    return list(rivals.values_list("id", flat=True))


def branch_leaf_run(run: Run, anchor: Message) -> Run:
    """The run whose restore makes the branch shown through anchor active: its leaf's run.

    The branch runs from the root through anchor, then down the most recent descendants (as
    the conversation shows it). Its leaf is the last message of its run, so restoring that
    run activates exactly this branch. The branch must go through one of run's messages.
    """
    leaf_id = latest_leaf_below(anchor.id)
    if not Message.objects.filter(pk__in=path_ids_to(leaf_id), run_id=run.id).exists():
        raise InvalidInput("the branch shown does not go through this run", field="leaf")
    return Run.objects.defer("snapshot").get(messages__pk=leaf_id)


def fork_depth(a: Run, b: Run) -> int:
    """The depth of the message one run of a thread continues from in the other (the deeper
    when both do), or -1."""
    forks = Message.objects.filter(
        pk__in=[f for f in (a.fork_from_id, b.fork_from_id) if f], run__in=[a, b]
    ).values_list("depth", flat=True)
    return max(forks, default=-1)


@dataclass(frozen=True)
class BranchContents:
    """What columns of runs show, keyed by run id: the stored messages of committed and
    superseded runs, what the others' events amount to, and every run's ratings."""

    stored: dict[str, list[Message]]
    projections: dict[str, Projection]
    ratings: dict[str, list[RunRating]]


def branch_contents(runs: Sequence[Run], *, below_depth: int) -> BranchContents:
    """The contents of runs' columns: stored messages deeper than below_depth (three
    queries)."""
    stored = [r for r in runs if r.status in (RunStatus.COMMITTED, RunStatus.SUPERSEDED)]
    rows = run_messages([r.id for r in stored], below_depth=below_depth)
    return BranchContents(
        stored=rows,
        projections=run_projections([r for r in runs if r.id not in rows]),
        ratings=run_ratings([r.id for r in runs]),
    )
