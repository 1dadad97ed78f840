"""Reads of annotation queues (issue 28): a project's queues and their progress, who reviews
them, the item a reviewer holds, the next item one may claim, and the branch an item judges.

Also the thread list's filter read from its query string (`parse_thread_filter`), so that a
queue made from a saved list takes the threads the list shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.http import QueryDict

from transcripts.errors import InvalidInput
from transcripts.ids import is_ulid
from transcripts.models import (
    AnnotationQueue,
    Message,
    Project,
    QueueItem,
    QueueItemState,
    QueueReview,
    ScoreConfig,
    Thread,
)
from transcripts.permissions import Role, User, is_superuser, project_access
from transcripts.selectors.organise import split_archived
from transcripts.selectors.paths import path_ids_to
from transcripts.selectors.threads import RECENT_FIRST, filter_threads, search_threads

MAX_ROW_ID = 2**63 - 1
# The longest branch the review page shows (its last messages, the answer to judge last).
REVIEW_MESSAGES = 40

_STATUSES = ("", "live", "locked", "visible", "hidden")
_ARCHIVED: dict[str, bool | None] = {"": False, "yes": True, "any": None}
_TRUE = ("1", "on", "true", "yes")
_FALSE = ("", "0", "off", "false", "no")


# --- the thread list's filter ----------------------------------------------------------------


@dataclass(frozen=True)
class ThreadFilter:
    """The thread list's filters as its query string gives them (sort and paging ignored)."""

    query: str = ""
    status: str = ""
    has_branches: bool = False
    has_failed_runs: bool = False
    flagged: bool = False
    since: date | None = None
    until: date | None = None
    agent_or_model: str = ""
    archived: bool | None = False
    tag: str = ""


def _flag(params: Mapping[str, str], name: str) -> bool:
    """A checkbox of the list (branches=1, failed=on...)."""
    value = params.get(name, "").strip().lower()
    if value not in _TRUE + _FALSE:
        raise InvalidInput(f"filter: {name} must be 1 or 0", field="filter")
    return value in _TRUE


def _day(params: Mapping[str, str], name: str) -> date | None:
    """A date of the list (since, until) as YYYY-MM-DD."""
    value = params.get(name, "").strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"filter: {name} must be a date (YYYY-MM-DD)", field="filter") from None


def _text(params: Mapping[str, str], name: str, limit: int) -> str:
    """A text filter of the list, at most limit characters."""
    value = params.get(name, "").strip()
    if len(value) > limit:
        raise InvalidInput(f"filter: {name} is longer than {limit} characters", field="filter")
    return value


def parse_thread_filter(text: str) -> ThreadFilter:
    """The thread list's filters from its query string (with or without the address before
    the "?"), checked as the list checks them; InvalidInput names what is wrong."""
    text = text.strip()
    if "?" in text:
        text = text.split("?", 1)[1]
    if len(text) > 2000:
        raise InvalidInput("filter is longer than 2000 characters", field="filter")
    query_dict = QueryDict(text)
    params = {key: query_dict.get(key, "") for key in query_dict}
    status = params.get("status", "")
    if status not in _STATUSES:
        raise InvalidInput(
            f"filter: status must be one of {', '.join(_STATUSES[1:])}", field="filter"
        )
    archived_choice = params.get("archived", "")
    if archived_choice not in _ARCHIVED:
        raise InvalidInput("filter: archived must be yes or any", field="filter")
    query, asked, said = split_archived(_text(params, "q", 200))
    return ThreadFilter(
        query=query,
        status=status,
        has_branches=_flag(params, "branches"),
        has_failed_runs=_flag(params, "failed"),
        flagged=_flag(params, "flagged"),
        since=_day(params, "since"),
        until=_day(params, "until"),
        agent_or_model=_text(params, "who", 200),
        archived=asked if said else _ARCHIVED[archived_choice],
        tag=" ".join(_text(params, "tag", 40).split()),
    )


def threads_matching(readable: QuerySet[Thread], spec: ThreadFilter, limit: int) -> list[str]:
    """Ids of at most limit threads of readable that the filter keeps, most recent first."""
    threads = filter_threads(
        search_threads(readable, spec.query),
        status=spec.status,
        has_branches=spec.has_branches,
        has_failed_runs=spec.has_failed_runs,
        flagged=spec.flagged,
        since=spec.since,
        until=spec.until,
        agent_or_model=spec.agent_or_model,
        archived=spec.archived,
        tag=spec.tag,
    )
    ordered = threads.order_by(*RECENT_FIRST.order)
    return [str(i) for i in ordered.values_list("id", flat=True)[:limit]]


def readable_ids(readable: QuerySet[Thread], thread_ids: Sequence[str]) -> set[str]:
    """Which of thread_ids are threads of readable."""
    ids = [i for i in thread_ids if is_ulid(i)]
    return {str(i) for i in readable.filter(pk__in=ids).values_list("id", flat=True)}


def messages_in(readable: QuerySet[Thread], message_ids: Sequence[str]) -> dict[str, str]:
    """message id -> its thread's id, for the messages of readable threads among message_ids."""
    ids = [i for i in message_ids if is_ulid(i)]
    rows = Message.objects.filter(pk__in=ids, thread__in=readable).values_list("id", "thread_id")
    return {str(m): str(t) for m, t in rows}


def last_answers(thread_ids: Sequence[str]) -> dict[str, str]:
    """thread id -> the last answer on its active path (threads without one are absent)."""
    rows = (
        Message.objects.filter(thread_id__in=list(thread_ids), active=True, role="assistant")
        .order_by("thread_id", "-depth")
        .distinct("thread_id")
        .values_list("thread_id", "id")
    )
    return {str(t): str(m) for t, m in rows}


# --- queues ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """How far a queue is: its items, those done, and those held by a reviewer now."""

    total: int = 0
    done: int = 0
    in_review: int = 0  # items held by a reviewer now

    @property
    def open(self) -> int:
        """Items still wanting a review."""
        return self.total - self.done

    @property
    def text(self) -> str:
        """ "37 of 120 done"."""
        return f"{self.done} of {self.total} done"


def live_configs_named(project: Project, names: Sequence[str]) -> dict[str, ScoreConfig]:
    """name -> the project's live config so called, for those of names that have one."""
    rows = ScoreConfig.objects.filter(project=project, name__in=list(names), archived_at=None)
    return {c.name: c for c in rows}


def live_configs_with_ids(project: Project, ids: Sequence[int]) -> list[ScoreConfig]:
    """The project's live configs among ids."""
    return list(ScoreConfig.objects.filter(project=project, pk__in=list(ids), archived_at=None))


def member_ids(project: Project, user_ids: Sequence[int]) -> set[int]:
    """Which of user_ids are members of project."""
    rows = project.memberships.filter(user_id__in=list(user_ids)).values_list("user_id", flat=True)
    return set(rows)


def queues_of(project: Project) -> list[AnnotationQueue]:
    """The project's queues, open ones first, newest first, each with its counts (`total`,
    `done`)."""
    return list(
        AnnotationQueue.objects.filter(project=project)
        .annotate(
            total=Count("items"),
            done=Count("items", filter=Q(items__state=QueueItemState.DONE)),
        )
        .order_by(F("closed_at").asc(nulls_first=True), "-created_at", "-id")
    )


def _storable(row_id: int) -> bool:
    """Whether row_id can be a row's id (a bigint): a larger one names nothing."""
    return 0 < row_id <= MAX_ROW_ID


def queue_in(project: Project, queue_id: int) -> AnnotationQueue | None:
    """The project's queue with that id, or None."""
    if not _storable(queue_id):
        return None
    return AnnotationQueue.objects.filter(project=project, pk=queue_id).first()


def queue_by_id(queue_id: int) -> AnnotationQueue | None:
    """The queue with its project (for the access decision), or None."""
    if not _storable(queue_id):
        return None
    return AnnotationQueue.objects.select_related("project").filter(pk=queue_id).first()


def queue_configs(queue: AnnotationQueue, *, live: bool = False) -> list[ScoreConfig]:
    """The configs the queue asks for, by name (live: only those not archived since, which
    a review answers)."""
    configs = queue.configs.order_by("name")
    return list(configs.filter(archived_at=None) if live else configs)


def queue_member_names(queue: AnnotationQueue) -> list[str]:
    """The usernames of the members assigned to the queue ([]: every editor and up)."""
    return sorted(queue.members.values_list("username", flat=True))


@dataclass(frozen=True)
class Reviewer:
    """Who claims: a member (user_id) or a token (token_id), and whether they may see hidden
    threads (a hidden thread's items go to them only)."""

    user_id: int | None = None
    token_id: int | None = None
    sees_hidden: bool = False


def _active(now: datetime) -> Q:
    """Reviews that hold their item: completed (not skipped), or leased until after now."""
    return Q(completed_at__isnull=False, skipped=False) | Q(
        completed_at__isnull=True, leased_until__gt=now
    )


def progress(queue: AnnotationQueue, now: datetime) -> Progress:
    """The queue's counts now."""
    counts = QueueItem.objects.filter(queue=queue).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(state=QueueItemState.DONE))
    )
    in_review = (
        QueueReview.objects.filter(
            item__queue=queue,
            item__state=QueueItemState.OPEN,
            completed_at__isnull=True,
            leased_until__gt=now,
        )
        .values("item_id")
        .distinct()
        .count()
    )
    return Progress(total=counts["total"], done=counts["done"], in_review=in_review)


def may_review(user: User, queue: AnnotationQueue) -> bool:
    """Whether user reviews queue: an assigned member (who can read the project), or with
    nobody assigned any editor and up (a superuser always)."""
    if is_superuser(user):
        return True
    access = project_access(user, queue.project_id)
    if not access.can_read:
        return False
    assigned = queue.members.all()
    if assigned.exists():
        return assigned.filter(pk__in=[user.pk]).exists()
    return access.role is not None and access.role >= Role.EDITOR


def _of_reviewer(who: Reviewer) -> Q:
    """Reviews by the user (or, without one, the token)."""
    return Q(reviewer_id=who.user_id) if who.user_id is not None else Q(token_id=who.token_id)


def _readable_items(who: Reviewer, prefix: str = "") -> Q:
    """Items the reviewer may be given: not on a hidden thread, unless they see those."""
    return Q() if who.sees_hidden else Q(**{f"{prefix}thread__hidden": False})


def held_review(queue: AnnotationQueue, who: Reviewer, now: datetime) -> QueueReview | None:
    """The reviewer's live lease in queue (an open item they hold, not yet reviewed), with its
    item, thread and message; or None."""
    return (
        QueueReview.objects.select_related("item", "item__thread", "item__message")
        .filter(
            _of_reviewer(who),
            _readable_items(who, "item__"),
            item__queue=queue,
            item__state=QueueItemState.OPEN,
            completed_at__isnull=True,
            leased_until__gt=now,
        )
        .order_by("-leased_until")
        .first()
    )


def review_of(item_id: int, who: Reviewer, *, lock: bool = False) -> QueueReview | None:
    """The reviewer's review (or lease) of the item, or None."""
    rows = QueueReview.objects.filter(_of_reviewer(who), item_id=item_id)
    return (rows.select_for_update() if lock else rows).first()


def next_candidate(
    queue: AnnotationQueue,
    who: Reviewer,
    now: datetime,
    passed: Sequence[int],
    *,
    wait: bool = False,
) -> QueueItem | None:
    """The oldest open item of queue the reviewer has not reviewed or skipped, held by fewer
    reviewers than the queue wants (as the statement's snapshot saw them), locked here until
    the transaction ends: one no other claim has locked (FOR UPDATE SKIP LOCKED), or with
    wait the first one, once the claim holding it ends. passed: items already found full."""
    mine = QueueReview.objects.filter(
        _of_reviewer(who), item_id=OuterRef("pk"), completed_at__isnull=False
    )
    held = (
        QueueReview.objects.filter(_active(now), item_id=OuterRef("pk"))
        .order_by()
        .values("item_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        QueueItem.objects.filter(_readable_items(who), queue=queue, state=QueueItemState.OPEN)
        .exclude(pk__in=list(passed))
        .exclude(Exists(mine))
        .alias(held=held)
        .filter(Q(held__isnull=True) | Q(held__lt=queue.reviews_per_item))
        .order_by("id")
        .select_for_update(skip_locked=not wait, of=("self",))
        .first()
    )


def holders(item: QueueItem, now: datetime) -> int:
    """How many reviews hold item now (read afresh: call it with the item locked)."""
    return QueueReview.objects.filter(_active(now), item=item).count()


def item_in(queue: AnnotationQueue, item_id: int, *, lock: bool = False) -> QueueItem | None:
    """The queue's item with that id (locked for an update when lock), or None."""
    if not _storable(item_id):
        return None
    rows = QueueItem.objects.filter(queue=queue, pk=item_id)
    return (rows.select_for_update() if lock else rows).first()


def review_branch(item: QueueItem) -> list[Message]:
    """The branch the item judges, root first (its last REVIEW_MESSAGES messages), each with
    its run's model: up to the item's message, else the thread's active path."""
    leaf_id = item.message_id or item.thread.head_id
    if leaf_id is None:
        return []
    ids = path_ids_to(str(leaf_id))[-REVIEW_MESSAGES:]
    columns = [f.name for f in Message._meta.concrete_fields if f.name != "search"]
    return list(
        Message.objects.select_related("run")
        .only(*columns, "run__id", "run__model")
        .filter(thread_id=item.thread_id, pk__in=ids)
        .order_by("depth")
    )
