"""Reads of judgement (issue 28): a project's score configs, scores on messages, runs and
threads, and the feedback (thumbs up/down) on answers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from django.db.models import Count, F, Q, QuerySet

from transcripts.ids import is_ulid
from transcripts.models import Feedback, Message, Project, Score, ScoreConfig, Thread
from transcripts.pagination import Keyset, Position
from transcripts.selectors.pages import keyset_page

# Project.settings key: true when every score must name one of the project's configs.
NEEDS_CONFIG = "scoresNeedConfig"
# The API's list of scores: oldest first (ids are ULIDs, so in time order).
SCORES_BY_ID = Keyset("id")


@dataclass(frozen=True)
class FeedbackSummary:
    """The feedback on one answer: how many up and down, and the reader's own (or None)."""

    up: int = 0
    down: int = 0
    mine: Feedback | None = None


def scores_need_config(project_id: int) -> bool:
    """Whether the project refuses a score whose name has no config (read now: the flag a
    page loaded may have changed)."""
    settings = Project.objects.filter(pk=project_id).values_list("settings", flat=True).first()
    return isinstance(settings, dict) and settings.get(NEEDS_CONFIG) is True


def score_configs(project: Project | int) -> list[ScoreConfig]:
    """The project's configs: the live ones by name, then the archived ones, newest first."""
    newest_archived = F("archived_at").desc(nulls_first=True)
    return list(ScoreConfig.objects.filter(project=project).order_by(newest_archived, "name"))


def live_config(project: Project | int, name: str) -> ScoreConfig | None:
    """The project's config called name that is not archived, or None."""
    return ScoreConfig.objects.filter(project=project, name=name, archived_at__isnull=True).first()


def config_in(project: Project | int, config_id: int) -> ScoreConfig | None:
    """The project's config with that id (archived or not), or None."""
    return ScoreConfig.objects.filter(project=project, pk=config_id).first()


def score_by_id(score_id: str) -> Score | None:
    """The score with its thread (for the access decision), or None."""
    if not is_ulid(score_id):
        return None
    return Score.objects.select_related("thread").filter(pk=score_id).first()


def score_by_external_id(project_id: int, external_id: str) -> Score | None:
    """The project's score with that externalId, locked for its update, or None."""
    return (
        Score.objects.select_for_update()
        .filter(project_id=project_id, external_id=external_id)
        .first()
    )


def message_to_judge(message_id: str) -> Message | None:
    """The message with its thread (for the access decision), or None."""
    if not is_ulid(message_id):
        return None
    return Message.objects.select_related("thread").filter(pk=message_id).first()


def scores_of(
    rows: QuerySet[Score],
    *,
    thread_id: str | None = None,
    run_id: str | None = None,
    message_id: str | None = None,
    name: str | None = None,
) -> QuerySet[Score]:
    """rows narrowed to a thread (all its scores), a run's, a message's and a name."""
    if thread_id is not None:
        rows = rows.filter(thread_id=thread_id)
    if run_id is not None:
        rows = rows.filter(run_id=run_id)
    if message_id is not None:
        rows = rows.filter(message_id=message_id)
    if name is not None:
        rows = rows.filter(name=name)
    return rows


def scores_page(rows: QuerySet[Score], *, after: Position | None, limit: int) -> list[Score]:
    """Up to limit scores of rows, oldest first, after position."""
    return keyset_page(rows, SCORES_BY_ID, after=after, limit=limit)


def message_scores(thread: Thread, message_ids: Collection[str]) -> dict[str, list[Score]]:
    """message id -> its scores (by name, oldest first), for the messages shown."""
    scores: dict[str, list[Score]] = defaultdict(list)
    rows = Score.objects.filter(thread_id=thread.id, message_id__in=list(message_ids))
    for score in rows.order_by("name", "created_at", "id"):
        scores[str(score.message_id)].append(score)
    return dict(scores)


def feedback_summaries(
    thread: Thread, message_ids: Collection[str], user_id: int | None
) -> dict[str, FeedbackSummary]:
    """message id -> the counts of its feedback and the reader's own, for the messages shown
    (a message without feedback is absent)."""
    rows = Feedback.objects.filter(thread_id=thread.id, message_id__in=list(message_ids))
    counts = rows.values("message_id").annotate(
        ups=Count("pk", filter=Q(up=True)), downs=Count("pk", filter=Q(up=False))
    )
    mine = {f.message_id: f for f in rows.filter(user_id=user_id)} if user_id else {}
    return {
        str(c["message_id"]): FeedbackSummary(c["ups"], c["downs"], mine.get(c["message_id"]))
        for c in counts
    }


def thread_scores(thread: Thread) -> list[Score]:
    """The scores on the thread itself (not on one of its messages or runs), by name, oldest
    first."""
    rows = Score.objects.filter(thread_id=thread.id, message_id__isnull=True, run_id__isnull=True)
    return list(rows.order_by("name", "created_at", "id"))
