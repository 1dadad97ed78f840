"""Reads of judgement for the run page and Compare (issue 28): a run's scores and its messages',
and each branch's scores and feedback counts. A branch's judgement is read from its own run
and messages only, so it never shows on a sibling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet

from transcripts.ids import ulid_of
from transcripts.models import Feedback, Message, Run, Score, Thread


def run_scores(run: Run) -> list[Score]:
    """The scores on run and on its messages (with their author, token and message), oldest
    first."""
    messages = Message.objects.filter(run_id=run.id).values("id")
    rows = Score.objects.filter(thread_id=run.thread_id).filter(
        Q(run_id=run.id) | Q(message_id__in=messages)
    )
    return list(_with_who(rows).order_by("created_at", "id"))


# A message's content is not needed to say what a score judges: its role is.
_HEAVY = ("message__parts", "message__metadata", "message__search")


def _with_who(scores: QuerySet[Score]) -> QuerySet[Score]:
    """scores with their author, token and message (role only) loaded."""
    return scores.select_related("author", "token", "message").defer(*_HEAVY)


@dataclass
class BranchJudgement:
    """What a branch of Compare carries: the scores on its run and shown messages, and the
    👍/👎 counts on its messages."""

    scores: list[Score] = field(default_factory=list)
    up: int = 0
    down: int = 0


def branch_judgement(
    thread: Thread, runs: Sequence[Run], shown: Mapping[str, Sequence[Message]]
) -> dict[str, BranchJudgement]:
    """run id -> its branch's judgement, for the runs compared (shown: each materialized run's
    messages as Compare shows them). Two queries."""
    found = {run.id: BranchJudgement() for run in runs}
    run_of = {m.id: run_id for run_id, messages in shown.items() for m in messages}
    scores = (
        Score.objects.filter(thread_id=thread.id)
        .filter(Q(run_id__in=list(found)) | Q(message_id__in=list(run_of)))
        .order_by("name", "created_at", "id")
    )
    for score in _with_who(scores):
        owner = ulid_of(score.run_id) if score.run_id else run_of.get(ulid_of(score.message_id))
        if owner in found:
            found[owner].scores.append(score)
    counts = (
        Feedback.objects.filter(thread_id=thread.id, message_id__in=list(run_of))
        .values("message_id")
        .annotate(ups=Count("pk", filter=Q(up=True)), downs=Count("pk", filter=Q(up=False)))
        .values_list("message_id", "ups", "downs")
    )
    for message_id, ups, downs in counts:
        branch = found[run_of[ulid_of(message_id)]]
        branch.up += ups
        branch.down += downs
    return found
