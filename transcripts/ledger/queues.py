"""Annotation queues (issue 28): made by a project's moderators and admins from a saved
thread-list filter or picked threads and answers; reviewers claim one item at a time (a
15-minute lease), score it with the queue's configs or skip it. Every write is audited.

A claim locks the oldest free item (`SELECT … FOR UPDATE SKIP LOCKED`) and counts its holders
again under that lock, so two reviewers never hold the same item unless the queue wants more
than one review of it; a lease that runs out returns the item. An item with all its reviews
is done and leaves the queue.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput, NotFound
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import account_of, require
from transcripts.ledger.scores import Author, ScoreSpec, Target, add_score
from transcripts.models import (
    AnnotationQueue,
    Project,
    QueueItem,
    QueueItemState,
    QueueReview,
    ScoreConfig,
    ScoreDataType,
    ScoreSource,
    ScoreWriters,
    Thread,
)
from transcripts.permissions import project_access, readable_threads
from transcripts.selectors.queues import (
    Reviewer,
    held_review,
    holders,
    item_in,
    last_answers,
    live_configs_named,
    live_configs_with_ids,
    may_review,
    member_ids,
    messages_in,
    next_candidate,
    parse_thread_filter,
    queue_configs,
    readable_ids,
    review_of,
    threads_matching,
)

LEASE = timedelta(minutes=15)
MAX_ITEMS = 1000
MAX_REVIEWS_PER_ITEM = 20
MAX_NAME = 200
MAX_DESCRIPTION = 2000
# How many full items a claim passes over (each counted again under its lock) before it
# answers that nothing is free.
MAX_PASSED = 50
YES = ("y", "yes", "true", "1")
NO = ("n", "no", "false", "0")


@dataclass(frozen=True)
class QueueSpec:
    """A queue as asked for, before its checks: its configs by name (the API) or id (pages)."""

    name: str
    description: str = ""
    config_names: tuple[str, ...] = ()
    config_ids: tuple[int, ...] = ()
    member_ids: tuple[int, ...] = ()
    reviews_per_item: int = 1


@dataclass(frozen=True)
class ItemSource:
    """Where items come from: a thread-list query string, thread ids, message ids, and ids
    that may be either (a page's one box)."""

    filter: str = ""
    thread_ids: tuple[str, ...] = ()
    message_ids: tuple[str, ...] = ()
    any_ids: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether it names nothing."""
        return not (self.filter.strip() or self.thread_ids or self.message_ids or self.any_ids)


def _sorted_ids(readable: QuerySet[Thread], source: ItemSource) -> ItemSource:
    """source with its any_ids sorted into thread ids and message ids (an id that is neither
    is taken as a message id, which the checks then refuse, naming it)."""
    if not source.any_ids:
        return source
    threads = readable_ids(readable, source.any_ids)
    return replace(
        source,
        thread_ids=(*source.thread_ids, *(i for i in source.any_ids if i in threads)),
        message_ids=(*source.message_ids, *(i for i in source.any_ids if i not in threads)),
        any_ids=(),
    )


@dataclass(frozen=True)
class Added:
    """What adding items did: how many were new, how many matched, whether the cap cut it."""

    added: int = 0
    matched: int = 0
    capped: bool = False

    @property
    def text(self) -> str:
        """What the page and the API say about it."""
        said = f"{self.added} item{'s' if self.added != 1 else ''} added"
        if self.capped:
            said += f" (the first {MAX_ITEMS:,} of the matching threads: the rest were left out)"
        elif self.matched > self.added:
            said += f" ({self.matched - self.added} already in the queue)"
        return said


# --- checks ----------------------------------------------------------------------------------


def _require_manager(author: Author, project: Project) -> None:
    """Refuse a member below moderator (a token: the API admitted it with the admin scope)."""
    if author.user is not None:
        require(project_access(author.user, project).can_moderate, "manage annotation queues")


def _require_reviewer(author: Author, queue: AnnotationQueue) -> None:
    """Refuse a member who does not review queue, and any claim on a closed queue."""
    if author.user is not None:
        require(may_review(author.user, queue), "review in this queue")
    if queue.closed_at is not None:
        raise Conflict("this queue is closed", queueId=queue.pk)


def _text(text: str, *, limit: int, field: str, required: bool = False) -> str:
    """text trimmed, within limit (and not empty when required)."""
    text = (text or "").strip()
    if required and not text:
        raise InvalidInput(f"{field} is required", field=field)
    if len(text) > limit:
        raise InvalidInput(f"{field} is longer than {limit} characters", field=field)
    return text


def _configs(project: Project, spec: QueueSpec) -> list[ScoreConfig]:
    """The live configs spec names, each one people may write; at least one."""
    if spec.config_names:
        found = live_configs_named(project, spec.config_names)
        missing = [n for n in spec.config_names if n not in found]
        if missing:
            raise InvalidInput(
                f"scoreConfigs: no score called {missing[0]} is configured in this project",
                field="scoreConfigs",
            )
        configs = list(found.values())
    else:
        configs = live_configs_with_ids(project, spec.config_ids)
        if len(configs) != len(set(spec.config_ids)):
            raise InvalidInput(
                "scoreConfigs: choose the project's live scores", field="scoreConfigs"
            )
    if not configs:
        raise InvalidInput("scoreConfigs: choose at least one score", field="scoreConfigs")
    for config in configs:
        if config.writers == ScoreWriters.API:
            raise InvalidInput(
                f"scoreConfigs: {config.name} may not be written by people", field="scoreConfigs"
            )
    return sorted(configs, key=lambda c: c.name)


def _readable(author: Author, project: Project) -> QuerySet[Thread]:
    """The project's threads the author may put in a queue (a token with the admin scope:
    every one)."""
    if author.user is not None:
        return readable_threads(author.user, project=project)
    return Thread.objects.filter(project=project)


def _wanted(
    project: Project, author: Author, source: ItemSource
) -> tuple[list[tuple[str, str | None]], bool]:
    """The (thread id, message id or None) pairs source names, and whether the cap cut them."""
    readable = _readable(author, project)
    source = _sorted_ids(readable, source)
    if len(source.thread_ids) + len(source.message_ids) > MAX_ITEMS:
        raise InvalidInput(f"give at most {MAX_ITEMS} ids at once", field="threadIds")
    found = readable_ids(readable, source.thread_ids)
    for thread_id in source.thread_ids:
        if thread_id not in found:
            raise InvalidInput(
                f"threadIds: no thread {thread_id} in this project", field="threadIds"
            )
    messages = messages_in(readable, source.message_ids)
    for message_id in source.message_ids:
        if message_id not in messages:
            raise InvalidInput(
                f"messageIds: no message {message_id} in this project", field="messageIds"
            )
    thread_ids = list(dict.fromkeys(source.thread_ids))
    capped = False
    if source.filter.strip():
        matching = threads_matching(readable, parse_thread_filter(source.filter), MAX_ITEMS + 1)
        capped = len(matching) > MAX_ITEMS
        thread_ids = list(dict.fromkeys([*thread_ids, *matching[:MAX_ITEMS]]))
    answers = last_answers(thread_ids)
    pairs: list[tuple[str, str | None]] = [(t, answers.get(t)) for t in thread_ids]
    pairs += [(messages[m], m) for m in dict.fromkeys(source.message_ids)]
    pairs = list(dict.fromkeys(pairs))
    if len(pairs) > MAX_ITEMS:
        return pairs[:MAX_ITEMS], True
    return pairs, capped


def _add(queue: AnnotationQueue, author: Author, source: ItemSource) -> Added:
    """Put the items source names into queue (those in it already stay as they are)."""
    pairs, capped = _wanted(queue.project, author, source)
    before = QueueItem.objects.filter(queue=queue).count()
    QueueItem.objects.bulk_create(
        [QueueItem(queue=queue, thread_id=t, message_id=m) for t, m in pairs],
        ignore_conflicts=True,
    )
    added = QueueItem.objects.filter(queue=queue).count() - before
    return Added(added=added, matched=len(pairs), capped=capped)


# --- queues ----------------------------------------------------------------------------------


@transaction.atomic
def create_queue(
    *, project: Project, author: Author, spec: QueueSpec, source: ItemSource
) -> tuple[AnnotationQueue, Added]:
    """A new queue of project (its moderators' and admins'), with the items source names."""
    _require_manager(author, project)
    name = _text(spec.name, limit=MAX_NAME, field="name", required=True)
    description = _text(spec.description, limit=MAX_DESCRIPTION, field="description")
    if not 1 <= spec.reviews_per_item <= MAX_REVIEWS_PER_ITEM:
        raise InvalidInput(
            f"reviewsPerItem must be from 1 to {MAX_REVIEWS_PER_ITEM}", field="reviewsPerItem"
        )
    configs = _configs(project, spec)
    members = set(spec.member_ids)
    if members - member_ids(project, list(members)):
        raise InvalidInput("members: assign members of this project only", field="members")
    queue = AnnotationQueue.objects.create(
        project=project,
        name=name,
        description=description,
        reviews_per_item=spec.reviews_per_item,
        source_filter=_text(source.filter, limit=2000, field="filter"),
        created_by=account_of(author.user),
    )
    queue.configs.set(configs)
    queue.members.set(members)
    added = _add(queue, author, source)
    record_audit(
        author.audited, "create_queue", queue, project=project, name=name,
        items=added.added, capped=added.capped, **author.details(),
    )  # fmt: skip
    return queue, added


@transaction.atomic
def add_items(*, queue: AnnotationQueue, author: Author, source: ItemSource) -> Added:
    """Add the items source names to an open queue (its project's moderators' and admins')."""
    _require_manager(author, queue.project)
    if queue.closed_at is not None:
        raise Conflict("this queue is closed", queueId=queue.pk)
    if source.empty:
        raise InvalidInput("give a filter, threadIds or messageIds", field="filter")
    added = _add(queue, author, source)
    record_audit(
        author.audited, "add_queue_items", queue, project=queue.project,
        items=added.added, capped=added.capped, **author.details(),
    )  # fmt: skip
    return added


@transaction.atomic
def close_queue(*, queue: AnnotationQueue, author: Author) -> AnnotationQueue:
    """Close queue: nobody claims from it again; its reviews and scores stay. Twice changes
    nothing."""
    _require_manager(author, queue.project)
    if queue.closed_at is None:
        queue.closed_at = timezone.now()
        queue.save(update_fields=["closed_at"])
        record_audit(
            author.audited, "close_queue", queue, project=queue.project, **author.details()
        )
    return queue


# --- reviews ---------------------------------------------------------------------------------


def _who(queue: AnnotationQueue, author: Author, sees_hidden: bool = False) -> Reviewer:
    """The reviewer author is: a member, who sees hidden threads as their role says; or a
    token, which sees them as its caller says (the admin scope)."""
    if author.user is not None:
        access = project_access(author.user, queue.project_id)
        return Reviewer(user_id=author.user.pk, sees_hidden=access.sees_hidden)
    return Reviewer(token_id=author.token_id, sees_hidden=sees_hidden)


@transaction.atomic
def claim_next(
    *, queue: AnnotationQueue, author: Author, sees_hidden: bool = False
) -> QueueReview | None:
    """The item the reviewer holds in queue, its lease renewed; else the next free item, held
    by them for LEASE from now; None when nothing is left for them.

    First the items no other claim is busy with (SKIP LOCKED); when none is left, the others,
    each once the claim on it ends (a queue wanting N reviews may still have room in it). An
    item is locked in a savepoint and let go when it turns out full, so a waiting claim holds
    no lock and two claims never wait on each other. An item on a hidden thread goes only to
    a reviewer who sees hidden threads (a token: sees_hidden, its admin scope)."""
    _require_reviewer(author, queue)
    now = timezone.now()
    who = _who(queue, author, sees_hidden)
    held = held_review(queue, who, now)
    if held is not None:
        held.leased_until = now + LEASE
        held.save(update_fields=["leased_until"])
        return held
    passed: list[int] = []
    for wait in (False, True):
        while len(passed) < MAX_PASSED:
            try:
                with transaction.atomic():  # a savepoint: a full item's lock goes with it
                    item = next_candidate(queue, who, now, passed, wait=wait)
                    if item is None:
                        break
                    if holders(item, now) >= queue.reviews_per_item:
                        raise _Full(item.pk)
                    return _lease(queue, item, author, who, now)
            except _Full as full:
                passed.append(full.item_id)
    return None


class _Full(Exception):
    """The item a claim locked has all the holders its queue wants (its savepoint is rolled
    back, and its lock released)."""

    def __init__(self, item_id: int) -> None:
        super().__init__(item_id)
        self.item_id = item_id


def _lease(
    queue: AnnotationQueue, item: QueueItem, author: Author, who: Reviewer, now: datetime
) -> QueueReview:
    """The reviewer's lease on item (their own run-out lease, if any, taken up again)."""
    review = review_of(item.pk, who) or QueueReview(
        item=item, reviewer=account_of(author.user), token_id=who.token_id
    )
    review.leased_until = now + LEASE
    review.save()
    review.item = item
    record_audit(
        author.audited, "claim_queue_item", queue, project=queue.project, itemId=item.pk,
        thread_id=str(item.thread_id), **author.details(),
    )  # fmt: skip
    return review


def _held_item(
    queue: AnnotationQueue, item_id: int, author: Author
) -> tuple[QueueItem, QueueReview]:
    """The queue's open item (locked) and the reviewer's unfinished review of it, or a refusal
    saying why they may not review it now."""
    item = item_in(queue, item_id, lock=True)
    if item is None:
        raise NotFound(f"item {item_id} is not in this queue", itemId=item_id)
    review = review_of(item.pk, _who(queue, author), lock=True)
    if review is None or review.completed_at is not None:
        raise Conflict("you do not hold this item: take the next one", itemId=item_id)
    if item.state == QueueItemState.DONE:
        raise Conflict("this item has all its reviews already", itemId=item_id)
    now = timezone.now()
    if review.leased_until <= now and holders(item, now) >= queue.reviews_per_item:
        raise Conflict("your hold on this item ran out and others took it", itemId=item_id)
    return item, review


def _spec(config: ScoreConfig, text: str, comment: str, source: str) -> ScoreSpec:
    """The score a reviewer's answer for config makes (a number, a label, or yes/no)."""
    text = text.strip()
    if not text:
        raise InvalidInput(f"{config.name}: give an answer", field=config.name)
    base = ScoreSpec(name=config.name, comment=comment, source=source)
    if config.data_type == ScoreDataType.CATEGORICAL:
        return replace(base, label=text)
    if config.data_type == ScoreDataType.BOOLEAN:
        if text.lower() not in YES + NO:
            raise InvalidInput(f"{config.name}: answer yes or no", field=config.name)
        return replace(base, value=1.0 if text.lower() in YES else 0.0)
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"{config.name}: give a number", field=config.name) from None
    if not math.isfinite(value):
        raise InvalidInput(f"{config.name}: give a number", field=config.name)
    return replace(base, value=value)


@transaction.atomic
def submit_review(
    *,
    queue: AnnotationQueue,
    item_id: int,
    author: Author,
    answers: Mapping[str, str],
    comment: str = "",
) -> QueueItem:
    """Score the item the reviewer holds with one answer per config of the queue (name ->
    the answer as typed), then finish their review; the item is done with its last review.
    Any refusal stores nothing."""
    _require_reviewer(author, queue)
    item, review = _held_item(queue, item_id, author)
    source = ScoreSource.PERSON if author.user is not None else ScoreSource.API
    target = Target(thread=item.thread, message=item.message)
    configs = queue_configs(queue, live=True)
    specs = [_spec(c, answers.get(c.name, ""), comment, source) for c in configs]
    for spec in specs:
        try:
            add_score(target=target, author=author, spec=spec)
        except InvalidInput as refused:
            raise InvalidInput(refused.message, field=spec.name) from None
    now = timezone.now()
    review.completed_at = now
    review.save(update_fields=["completed_at"])
    item.done_count += 1
    if item.done_count >= queue.reviews_per_item:
        item.state = QueueItemState.DONE
    item.save(update_fields=["done_count", "state"])
    record_audit(
        author.audited, "review_queue_item", queue, project=queue.project, itemId=item.pk,
        thread_id=str(item.thread_id), scores=len(specs), **author.details(),
    )  # fmt: skip
    return item


@transaction.atomic
def skip_item(*, queue: AnnotationQueue, item_id: int, author: Author) -> QueueItem:
    """The reviewer passes on the item they hold: it goes back to the others, never to them."""
    _require_reviewer(author, queue)
    item, review = _held_item(queue, item_id, author)
    review.completed_at = timezone.now()
    review.skipped = True
    review.save(update_fields=["completed_at", "skipped"])
    record_audit(
        author.audited, "skip_queue_item", queue, project=queue.project, itemId=item.pk,
        thread_id=str(item.thread_id), **author.details(),
    )  # fmt: skip
    return item
