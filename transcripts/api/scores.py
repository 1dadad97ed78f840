"""Scores (issue 28): post a score on a message, run or thread, list and delete scores, and
read or add the project's score configs.

Posting a score needs `ingest` (an agent or an evaluator judges what it produced) and reaching
its target; listing needs `read`, so an ingest-only token may post scores but not read them;
deleting a score and adding a config need `admin`. A target out of the caller's reach (another
project, a hidden thread without `admin`) answers as an unknown id does.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypedDict

from django.http import HttpRequest
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts.api.access import (
    caller,
    get_project_for_caller,
    get_run_for_caller,
    get_thread_for_caller,
    readable_scores,
    require_admin_scope,
    require_scope,
    row_id,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import (
    ScoreConfigIn,
    ScoreConfigList,
    ScoreConfigOut,
    ScoreIn,
    ScoreOut,
    ScorePage,
)
from transcripts.errors import InvalidInput, NotFound
from transcripts.ledger import scores as ledger_scores
from transcripts.ledger.scores import Author, ConfigSpec, ScoreSpec, Target
from transcripts.models import Message, Score, ScoreConfig
from transcripts.pagination import decode_position, encode_cursor, ulid
from transcripts.permissions import INGEST, READ
from transcripts.selectors import scores as selectors

router = Router(auth=read_auth)  # mounted at the API's root: /scores and /score-configs


class ScoreAnswer(TypedDict):
    """What ScoreOut reads."""

    id: str
    targetType: str
    threadId: str
    runId: str | None
    messageId: str | None
    name: str
    value: float | None
    label: str | None
    comment: str
    source: str
    configId: int | None
    author: str | None
    externalId: str | None
    createdAt: datetime
    updatedAt: datetime


def score_out(score: Score) -> ScoreAnswer:
    """A score as the API shows it."""
    return {
        "id": str(score.pk),
        "targetType": score.target_type,
        "threadId": str(score.thread_id),
        "runId": str(score.run_id) if score.run_id else None,
        "messageId": str(score.message_id) if score.message_id else None,
        "name": score.name,
        "value": score.value,
        "label": score.label or None,
        "comment": score.comment,
        "source": score.source,
        "configId": score.config_id,
        "author": _author_name(score),
        "externalId": score.external_id or None,
        "createdAt": score.created_at,
        "updatedAt": score.updated_at,
    }


def _author_name(score: Score) -> str | None:
    """Who wrote score: the member's username, else the token's name (None: both gone)."""
    if score.author is not None:
        return score.author.get_username()
    return score.token.name if score.token is not None else None


def config_out(config: ScoreConfig) -> dict[str, Any]:
    """A config as the API shows it."""
    return {
        "id": config.pk,
        "name": config.name,
        "dataType": config.data_type,
        "min": config.min_value,
        "max": config.max_value,
        "labels": config.label_list,
        "description": config.description,
        "writers": config.writers,
        "createdAt": config.created_at,
        "archivedAt": config.archived_at,
    }


def _author(request: HttpRequest) -> Author:
    """The calling token, as the ledger's audit names it."""
    principal = caller(request)
    return Author(token_id=principal.token_id, token_name=principal.name)


def _message_for_caller(request: HttpRequest, message_id: str, needs: Iterable[str]) -> Message:
    """The message, if the caller reaches its thread with needs; else NotFound or 403."""
    refusal = NotFound(f"message {message_id} does not exist", messageId=message_id)
    message = selectors.message_to_judge(message_id)
    if message is None:
        raise refusal
    try:
        get_thread_for_caller(request, message.thread_id, needs=needs)
    except NotFound:
        raise refusal from None
    return message


def _target(request: HttpRequest, payload: ScoreIn) -> Target:
    """The one target payload names, reached with the ingest scope."""
    named = [payload.messageId, payload.runId, payload.threadId]
    if sum(item is not None for item in named) != 1:
        raise InvalidInput("give exactly one of messageId, runId and threadId", field="messageId")
    if payload.messageId is not None:
        message = _message_for_caller(request, payload.messageId, [INGEST])
        return Target(thread=message.thread, message=message)
    if payload.runId is not None:
        run = get_run_for_caller(request, payload.runId, needs=[INGEST])
        return Target(thread=run.thread, run=run)
    assert payload.threadId is not None
    return Target(thread=get_thread_for_caller(request, payload.threadId, needs=[INGEST]))


@router.post("/scores", response={200: ScoreOut, 201: ScoreOut, **ERRORS}, auth=ingest_auth)
def post_score(request: HttpRequest, payload: ScoreIn) -> Status[ScoreAnswer]:
    """Score a message, a run or a thread (201), checked against the config of its name (422
    naming the field, nothing stored). An externalId already in the project updates that
    score instead (200)."""
    require_scope(request, INGEST)
    score, created = ledger_scores.add_score(
        target=_target(request, payload),
        author=_author(request),
        spec=ScoreSpec(
            name=payload.name,
            value=payload.value,
            label=payload.label or "",
            comment=payload.comment or "",
            source=payload.source,
            external_id=payload.externalId or "",
        ),
    )
    return Status(201 if created else 200, score_out(score))


def _narrowed(
    request: HttpRequest, thread_id: str | None, run_id: str | None, message_id: str | None
) -> dict[str, str | None]:
    """The ids of the list's filters, each reached with the read scope (else 404 or 403)."""
    if thread_id is not None:
        thread_id = get_thread_for_caller(request, thread_id, needs=[READ]).id
    if run_id is not None:
        run_id = get_run_for_caller(request, run_id, needs=[READ]).id
    if message_id is not None:
        message_id = _message_for_caller(request, message_id, [READ]).id
    return {"thread_id": thread_id, "run_id": run_id, "message_id": message_id}


@router.get("/scores", response={200: ScorePage, **ERRORS})
def list_scores(
    request: HttpRequest,
    threadId: str | None = Query(None, description="Every score in this thread"),
    runId: str | None = Query(None, description="The scores of this run"),
    messageId: str | None = Query(None, description="The scores of this message"),
    name: str | None = Query(None, max_length=100, description="Only scores of this name"),
    limit: int = Query(100, ge=1, le=500),
    cursor: str | None = Query(None, max_length=200, description="nextCursor of the last page"),
) -> dict[str, Any]:
    """Scores the caller may read, oldest first, a page at a time."""
    rows = readable_scores(request, Score.objects.select_related("author", "token"))
    rows = selectors.scores_of(rows, **_narrowed(request, threadId, runId, messageId), name=name)
    after = decode_position(cursor, ulid) if cursor else None
    if cursor and after is None:
        raise InvalidInput("cursor is not a cursor this API returned", field="cursor")
    page = selectors.scores_page(rows, after=after, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    return {
        "scores": [score_out(score) for score in page],
        "nextCursor": encode_cursor(str(page[-1].pk)) if more and page else None,
    }


@router.delete("/scores/{scoreId}", response={204: None, **ERRORS}, auth=ingest_auth)
def delete_score(request: HttpRequest, scoreId: str) -> Status[None]:
    """Delete a score (204): needs the admin scope."""
    score = selectors.score_by_id(scoreId)
    refusal = NotFound(f"score {scoreId} does not exist", scoreId=scoreId)
    if score is None:
        raise refusal
    try:
        get_thread_for_caller(request, score.thread_id, needs=[])
    except NotFound:
        raise refusal from None
    require_admin_scope(request)
    ledger_scores.delete_score(score=score, author=_author(request))
    return Status(204, None)


@router.get("/score-configs", response={200: ScoreConfigList, **ERRORS})
def list_configs(
    request: HttpRequest,
    project: str | None = Query(None, description="The project's slug (a token: its own)"),
) -> dict[str, Any]:
    """The project's score configs, archived ones included (with archivedAt)."""
    found = get_project_for_caller(request, project, needs=[READ])
    return {
        "configs": [config_out(c) for c in selectors.score_configs(found)],
        "scoresNeedConfig": selectors.scores_need_config(found.pk),
    }


@router.post("/score-configs", response={201: ScoreConfigOut, **ERRORS}, auth=ingest_auth)
def create_config(request: HttpRequest, payload: ScoreConfigIn) -> Status[dict[str, Any]]:
    """Add a score config to the token's project (201): needs the admin scope; a name taken by
    a config not archived is a 409."""
    found = get_project_for_caller(request, None, needs=[])
    require_admin_scope(request)
    config = ledger_scores.create_score_config(
        project=found,
        author=_author(request),
        spec=ConfigSpec(
            name=payload.name,
            data_type=payload.dataType,
            min_value=payload.min,
            max_value=payload.max,
            labels=tuple(payload.labels),
            description=payload.description,
            writers=payload.writers,
        ),
    )
    return Status(201, config_out(config))


@router.post(
    "/score-configs/{configId}/archive", response={200: ScoreConfigOut, **ERRORS}, auth=ingest_auth
)
def archive_config(request: HttpRequest, configId: str) -> dict[str, Any]:
    """Archive a config of the token's project (admin scope): its scores stay, its name is free
    for a new config. Archiving twice changes nothing."""
    found = get_project_for_caller(request, None, needs=[])
    config = selectors.config_in(found, row_id(configId, "configId", "score config"))
    if config is None:
        raise NotFound(f"score config {configId} does not exist", configId=configId)
    require_admin_scope(request)
    return config_out(ledger_scores.archive_score_config(config=config, author=_author(request)))
