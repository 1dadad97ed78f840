"""Threads: create, list and search, read, and the messages of a path."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest, JsonResponse
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import (
    caller,
    caller_project,
    get_thread_for_caller,
    readable_threads,
    reads_content,
    require_scope,
    rights,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.chat import ui_messages
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import (
    MAX_INT,
    MessagePage,
    ThreadIn,
    ThreadOut,
    ThreadPage,
    ThreadPatch,
    ThreadStatusOut,
    thread_out,
)
from transcripts.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from transcripts.ids import is_ulid
from transcripts.ledger import organise as ledger_organise
from transcripts.models import Thread
from transcripts.pagination import (
    Parser,
    Position,
    decode_position,
    encode_cursor,
    integer,
    moment,
    ulid,
)
from transcripts.permissions import ADMIN, INGEST, READ
from transcripts.selectors.organise import split_archived
from transcripts.selectors.score_filters import judged_threads, split_judged

router = Router(tags=["threads"], auth=read_auth)


@router.post(
    "",
    response={200: ThreadOut | ThreadStatusOut, 201: ThreadOut | ThreadStatusOut, **ERRORS},
    auth=ingest_auth,
)
def create_thread(request: HttpRequest, payload: ThreadIn) -> Status[Thread | dict[str, Any]]:
    """Create a thread in the token's project (201); with a client-chosen id, repeating the
    call returns it (200). Without the read scope: ids and state only, no content."""
    require_scope(request, INGEST)
    thread, created = ledger.create_thread(
        project=caller_project(request),
        title=payload.title,
        metadata=payload.metadata,
        agents=payload.agents,
        thread_id=payload.id,
    )
    if not created and not rights(caller(request), thread).in_project:
        # A hidden thread out of the token's reach answers as another project's id does.
        raise Conflict("this thread id cannot be used: choose another", threadId=thread.id)
    return Status(201 if created else 200, thread_out(thread, content=reads_content(request)))


def _position(cursor: str, *parsers: Parser) -> Position:
    """The position a cursor of this API holds, or InvalidInput."""
    position = decode_position(cursor, *parsers)
    if position is None:
        raise InvalidInput("cursor is not a cursor this API returned", field="cursor")
    return position


def _depth(value: Any) -> int | None:
    """A path cursor's depth, else None."""
    depth = integer(value)
    return depth if depth is not None and -1 <= depth <= MAX_INT else None


@router.get("", response={200: ThreadPage, **ERRORS})
def list_threads(
    request: HttpRequest,
    q: str = Query("", max_length=500, description="Full-text search over titles and messages"),
    limit: int = Query(50, ge=1, le=200),
    cursor: str | None = Query(None, max_length=200, description="nextCursor of the last page"),
    externalId: str | None = Query(
        None,
        max_length=500,
        description="Only the thread with this external id (an OTel conversation or trace id)",
    ),
    tag: str = Query("", max_length=40, description="Only threads carrying this tag"),
    archived: Literal["false", "true", "any"] = Query(
        "false", description="Archived threads: left out (false), only them (true), or both"
    ),
) -> dict[str, Any]:
    """Threads of the token's project, most recently updated first; q searches every branch
    (`archived:yes` in q finds archived threads, as archived=true does; `score:name<3`,
    `score:name=label`, `feedback:up|down` and `unscored` keep the threads so judged)."""
    readable = selectors.with_external_id(readable_threads(request), externalId)
    after = _position(cursor, moment, ulid) if cursor else None
    q, judged = split_judged(q)
    q, asked, said = split_archived(q)
    wanted = asked if said else _ARCHIVED[archived]
    filtered = judged_threads(
        selectors.filter_threads(readable, archived=wanted, tag=tag.strip()),
        caller(request).project_id,
        judged,
    )
    threads = selectors.search_threads(filtered, q)
    page = selectors.thread_page(threads, after=after, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    next_cursor = selectors.RECENT_FIRST.cursor(page[-1]) if more and page else None
    return {"threads": page, "nextCursor": next_cursor}


_ARCHIVED: dict[str, bool | None] = {"false": False, "true": True, "any": None}


@router.patch(
    "/{threadId}",
    response={200: ThreadOut | ThreadStatusOut, **ERRORS},
    auth=ingest_auth,
)
def update_thread(
    request: HttpRequest, threadId: str, payload: ThreadPatch
) -> Thread | dict[str, Any]:
    """Rename, retag (the list replaces the thread's tags) or (un)archive a thread; needs the
    ingest or admin scope (read alone is refused). Each change is in the audit log."""
    thread = get_thread_for_caller(request, threadId, needs=[INGEST])
    change = ledger_organise.ThreadChange(
        title=payload.title, tags=payload.tags, archived=payload.archived
    )
    ledger_organise.update_thread(
        thread=thread, user=None, change=change, via="api", **_token_details(request)
    )
    return thread_out(thread, content=reads_content(request))


@router.delete("/{threadId}", response={204: None, **ERRORS}, auth=ingest_auth)
def delete_thread(request: HttpRequest, threadId: str) -> Status[None]:
    """Delete a thread with its messages, runs and share links (admin scope); the audit log
    keeps what went."""
    thread = get_thread_for_caller(request, threadId, needs=[INGEST])
    if not rights(caller(request), thread).is_admin:
        raise PermissionDenied("deleting a thread needs the 'admin' scope", scope=ADMIN)
    ledger_organise.delete_thread(thread=thread, user=None, via="api", **_token_details(request))
    return Status(204, None)


def _token_details(request: HttpRequest) -> dict[str, str | int | None]:
    """What the audit log records of the calling token."""
    principal = caller(request)
    return {"token": principal.name, "tokenId": principal.token_id}


@router.get("/{threadId}", response={200: ThreadOut, **ERRORS})
def get_thread(request: HttpRequest, threadId: str) -> Thread:
    """One thread."""
    return get_thread_for_caller(request, threadId, needs=[READ])


@router.get(
    "/{threadId}/messages",
    # With format=ai-sdk the answer is an array (of AI SDK UIMessages), so the schema says so.
    response={200: MessagePage | list[dict[str, object]], **ERRORS},
    openapi_extra={
        "responses": {
            200: {
                "description": "A page of canonical messages; with format=ai-sdk the whole"
                " path as an array of AI SDK UIMessages (for useChat({messages}))"
            }
        }
    },
)
def thread_messages(
    request: HttpRequest,
    threadId: str,
    leaf: str | None = Query(None, description="Show the path to this message instead"),
    limit: int = Query(200, ge=1, le=1000),
    cursor: str | None = Query(None, max_length=200, description="nextCursor of the last page"),
    format: Literal["canonical", "ai-sdk"] = Query(
        "canonical", description="ai-sdk: the whole path as UIMessage[] (no pages)"
    ),
) -> dict[str, Any] | JsonResponse:
    """Canonical messages of the active path (or of the path to leaf), root first."""
    thread = get_thread_for_caller(request, threadId, needs=[READ])
    leaf_message = None
    if leaf is not None:
        if is_ulid(leaf):
            leaf_message = selectors.message_in(thread, leaf)
        if leaf_message is None:
            raise NotFound(f"message {leaf} is not in this thread", leaf=leaf)
    if format == "ai-sdk":
        return JsonResponse(ui_messages(thread, leaf_message), safe=False)
    after_depth = _position(cursor, _depth)[0] if cursor else -1
    page = selectors.path_page(thread, leaf=leaf_message, after_depth=after_depth, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    next_cursor = encode_cursor(page[-1].depth) if more and page else None
    return {"messages": page, "nextCursor": next_cursor}
