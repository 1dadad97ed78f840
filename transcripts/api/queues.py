"""Annotation queues over the API (issue 28): make one (admin scope), add items to it (admin
scope), read its progress (read scope, or a browser session of a member), and claim its next
item (a token with the read scope: the token is the reviewer, holding the item for 15
minutes; 204 when nothing is left for it).

A queue of another project does not exist for the caller (404, as an unknown id).
"""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Router, Schema, Status

from transcripts import permissions
from transcripts.api.access import caller, caller_project, row_id
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas.common import Id, InputSchema
from transcripts.errors import NotFound, PermissionDenied
from transcripts.ledger import queues as queue_services
from transcripts.ledger.queues import Added, ItemSource, QueueSpec
from transcripts.ledger.scores import Author
from transcripts.models import AnnotationQueue
from transcripts.permissions import ADMIN, READ, Principal
from transcripts.selectors import queues as queue_reads

router = Router(auth=read_auth)  # mounted at /queues


class QueueItemsIn(InputSchema):
    threadIds: list[Id] = Field(
        default_factory=list, description="Threads to judge, each on its last answer"
    )
    messageIds: list[Id] = Field(default_factory=list, description="Answers to judge")
    filter: str = Field(
        "",
        description="A thread-list query string (e.g. `q=refund&failed=1`): its matching "
        "threads, most recent first, at most 1,000",
    )


class NewQueueIn(QueueItemsIn):
    name: str = Field(description="The queue's name")
    description: str = ""
    scoreConfigs: list[str] = Field(description="Names of the project's score configs to ask")
    reviewsPerItem: int = Field(1, description="Reviews each item wants (1 to 20)")


class QueueProgressOut(Schema):
    total: int
    done: int
    open: int
    inReview: int = Field(description="Items held by a reviewer now")
    text: str = Field(examples=["37 of 120 done"])


class QueueItemsAddedOut(Schema):
    added: int = Field(description="Items new to the queue")
    matched: int = Field(description="Items the ids and filter named")
    capped: bool = Field(description="Whether the filter matched more than 1,000 threads")
    text: str


class QueueReviewIn(InputSchema):
    scores: dict[str, float | bool | str] = Field(
        default_factory=dict,
        description="One answer per score of the queue: a number, a label, or true/false",
        examples=[{"helpfulness": 4, "policy": True}],
    )
    comment: str = ""
    skip: bool = Field(False, description="Pass on the item instead (scores are ignored)")


class QueueReviewOut(Schema):
    itemId: int
    state: str = Field(description="open (wants more reviews) or done")
    doneCount: int


class QueueOut(Schema):
    id: int
    name: str
    description: str
    scoreConfigs: list[str]
    reviewsPerItem: int
    filter: str
    createdAt: datetime
    closedAt: datetime | None
    progress: QueueProgressOut


class NewQueueOut(QueueOut):
    items: QueueItemsAddedOut


class QueueClaimOut(Schema):
    itemId: int
    threadId: Id
    messageId: Id | None = Field(description="The answer to judge (null: the whole thread)")
    leasedUntil: datetime = Field(description="The item is the caller's until then")
    scoreConfigs: list[str]


def _author(principal: Principal) -> Author:
    """The calling token as the ledger names it."""
    return Author(token_id=principal.token_id, token_name=principal.name)


def _require_admin(principal: Principal) -> None:
    """403 unless the token holds the admin scope."""
    if ADMIN not in principal.scopes:
        raise PermissionDenied("this needs a token with the 'admin' scope", scope=ADMIN)


def _queue_for_caller(request: HttpRequest, queue_id: int) -> AnnotationQueue:
    """The queue, when it belongs to the caller's project (a session: one its user reads);
    else NotFound, as an unknown id."""
    refusal = NotFound(f"queue {queue_id} does not exist", queueId=queue_id)
    queue = queue_reads.queue_by_id(queue_id)
    if queue is None:
        raise refusal
    principal = caller(request)
    if principal.project_id is None:
        reached = permissions.project_access(principal.user, queue.project).can_read
    else:
        reached = queue.project_id == principal.project_id
    if not reached:
        raise refusal
    return queue


def _added(added: Added) -> QueueItemsAddedOut:
    return QueueItemsAddedOut(
        added=added.added, matched=added.matched, capped=added.capped, text=added.text
    )


def _queue_out(queue: AnnotationQueue) -> QueueOut:
    progress = queue_reads.progress(queue, timezone.now())
    return QueueOut(
        id=queue.pk,
        name=queue.name,
        description=queue.description,
        scoreConfigs=[c.name for c in queue_reads.queue_configs(queue)],
        reviewsPerItem=queue.reviews_per_item,
        filter=queue.source_filter,
        createdAt=queue.created_at,
        closedAt=queue.closed_at,
        progress=QueueProgressOut(
            total=progress.total,
            done=progress.done,
            open=progress.open,
            inReview=progress.in_review,
            text=progress.text,
        ),
    )


def _source(payload: QueueItemsIn) -> ItemSource:
    return ItemSource(
        filter=payload.filter,
        thread_ids=tuple(payload.threadIds),
        message_ids=tuple(payload.messageIds),
    )


@router.post("", response={201: NewQueueOut, **ERRORS}, auth=ingest_auth)
def create_queue(request: HttpRequest, payload: NewQueueIn) -> Status[NewQueueOut]:
    """Make a queue of the token's project (admin scope) from threadIds, messageIds and/or a
    thread-list filter (201, with how many items it holds)."""
    principal = caller(request)
    _require_admin(principal)
    spec = QueueSpec(
        name=payload.name,
        description=payload.description,
        config_names=tuple(payload.scoreConfigs),
        reviews_per_item=payload.reviewsPerItem,
    )
    queue, added = queue_services.create_queue(
        project=caller_project(request),
        author=_author(principal),
        spec=spec,
        source=_source(payload),
    )
    out = _queue_out(queue)
    return Status(201, NewQueueOut(**out.model_dump(), items=_added(added)))


@router.post("/{queueId}/items", response={200: QueueItemsAddedOut, **ERRORS}, auth=ingest_auth)
def add_items(request: HttpRequest, queueId: str, payload: QueueItemsIn) -> QueueItemsAddedOut:
    """Add threads, answers or a filter's threads to an open queue (admin scope)."""
    queue = _queue_for_caller(request, row_id(queueId, "queueId", "queue"))
    principal = caller(request)
    _require_admin(principal)
    return _added(
        queue_services.add_items(queue=queue, author=_author(principal), source=_source(payload))
    )


@router.get("/{queueId}", response={200: QueueOut, **ERRORS})
def get_queue(request: HttpRequest, queueId: str) -> QueueOut:
    """The queue and its progress (read scope)."""
    queue = _queue_for_caller(request, row_id(queueId, "queueId", "queue"))
    principal = caller(request)
    if principal.project_id is not None and not ({READ, ADMIN} & principal.scopes):
        raise PermissionDenied("this token lacks the 'read' scope", scope=READ)
    return _queue_out(queue)


@router.post(
    "/{queueId}/next",
    response={200: QueueClaimOut, 204: None, **ERRORS},
    auth=ingest_auth,
    openapi_extra={"responses": {204: {"description": "Nothing is left for the caller"}}},
)
def claim_next(request: HttpRequest, queueId: str) -> Status[QueueClaimOut | None]:
    """Claim the queue's next item for the calling token (read scope): the one it holds
    already, else the next free one, held for 15 minutes; 204 when nothing is left for it;
    409 when the queue is closed."""
    queue = _queue_for_caller(request, row_id(queueId, "queueId", "queue"))
    principal = caller(request)
    if not ({READ, ADMIN} & principal.scopes):
        raise PermissionDenied("this token lacks the 'read' scope", scope=READ)
    review = queue_services.claim_next(
        queue=queue, author=_author(principal), sees_hidden=ADMIN in principal.scopes
    )
    if review is None:
        return Status(204, None)
    item = review.item
    return Status(
        200,
        QueueClaimOut(
            itemId=item.pk,
            threadId=str(item.thread_id),
            messageId=str(item.message_id) if item.message_id else None,
            leasedUntil=review.leased_until,
            scoreConfigs=[c.name for c in queue_reads.queue_configs(queue, live=True)],
        ),
    )


def _answer_text(value: float | bool | str) -> str:
    """An answer as the review form would type it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float | int):
        return repr(value)
    return value


@router.post(
    "/{queueId}/items/{itemId}/review", response={200: QueueReviewOut, **ERRORS}, auth=ingest_auth
)
def review_item(
    request: HttpRequest, queueId: str, itemId: str, payload: QueueReviewIn
) -> QueueReviewOut:
    """Finish the calling token's review of the item it holds (read scope): its scores, one
    per score of the queue (source api), or skip; a refusal names the score and stores
    nothing; an item the token does not hold: 409."""
    queue = _queue_for_caller(request, row_id(queueId, "queueId", "queue"))
    principal = caller(request)
    if not ({READ, ADMIN} & principal.scopes):
        raise PermissionDenied("this token lacks the 'read' scope", scope=READ)
    author = _author(principal)
    if payload.skip:
        item = queue_services.skip_item(
            queue=queue, item_id=row_id(itemId, "itemId", "queue item"), author=author
        )
    else:
        answers = {name: _answer_text(value) for name, value in payload.scores.items()}
        item = queue_services.submit_review(
            queue=queue,
            item_id=row_id(itemId, "itemId", "queue item"),
            author=author,
            answers=answers,
            comment=payload.comment,
        )
    return QueueReviewOut(itemId=item.pk, state=item.state, doneCount=item.done_count)
