"""Reads of the run page beyond its trace: where the run stands among its thread's runs, the
message it forks from, its messages as they stand, and whether its events carry timing."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery

from transcripts.models import Event, Message, Run
from transcripts.projector import Projection
from transcripts.selectors.messages import ellipsize, message_preview
from transcripts.selectors.runs import projector_for
from transcripts.selectors.trace import carries_timing

EXCERPT_CHARS = 60


@dataclass(frozen=True)
class ForkPoint:
    """The message a run forks from: its number on the path (1 is the first), role and a
    one-line excerpt of its text (or what it calls)."""

    message_id: str
    number: int
    role: str
    excerpt: str


@dataclass(frozen=True)
class RunPlace:
    """Where a run stands: its ordinal among its thread's runs (oldest first) and the
    message it forks from (None: the run starts the thread)."""

    ordinal: int
    total: int
    fork: ForkPoint | None


def _count(runs: QuerySet[Run]) -> Subquery:
    """A subquery counting runs of the outer run's thread (runs: filtered by OuterRef)."""
    return Subquery(runs.values("thread_id").annotate(n=Count("id")).values("n")[:1])


def run_place(run: Run) -> RunPlace:
    """The run's ordinal among its thread's runs and its fork point (one query, whatever the
    run's shape)."""
    siblings = Run.objects.filter(thread_id=OuterRef("thread_id"))
    earlier = Q(created_at__lt=OuterRef("created_at")) | Q(
        created_at=OuterRef("created_at"), id__lt=OuterRef("id")
    )
    fork = Message.objects.filter(pk=OuterRef("fork_from_id"))
    row = (
        Run.objects.filter(pk=run.id)
        .values(
            total=_count(siblings),
            earlier=_count(siblings.filter(earlier)),
            fork_depth=F("fork_from__depth"),
            fork_role=F("fork_from__role"),
            fork_preview=Subquery(
                fork.annotate(preview=message_preview(EXCERPT_CHARS)).values("preview")[:1]
            ),
        )
        .first()
    )
    if row is None:  # deleted since it was read
        return RunPlace(ordinal=1, total=1, fork=None)
    place = None
    if run.fork_from_id and row["fork_depth"] is not None:
        excerpt = ellipsize(str(row["fork_preview"] or ""), EXCERPT_CHARS)
        number = int(row["fork_depth"]) + 1
        place = ForkPoint(run.fork_from_id, number, str(row["fork_role"]), excerpt)
    total = int(row["total"] or 1)
    return RunPlace(ordinal=int(row["earlier"] or 0) + 1, total=total, fork=place)


def run_projection(run: Run) -> Projection:
    """The run's messages as they stand, from its snapshot and the events after it."""
    return projector_for(run).result()


def events_carry_timing(run: Run) -> bool:
    """Whether the run's events were stamped at different moments (trace.carries_timing), in
    one aggregate query."""
    span = Event.objects.filter(run_id=run.id).aggregate(first=Min("at"), last=Max("at"))
    return carries_timing(span["first"], span["last"])
