"""Threads: create, list and search, read, and the messages of a path."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Status
from ninja.params.functions import Query

from transcripts import ledger, selectors
from transcripts.api.access import (
    ERRORS,
    MAX_INT,
    caller,
    clean_text,
    decode_cursor,
    encode_cursor,
    message_out,
    thread_out,
    visible_thread,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.schemas import MessagePage, ThreadIn, ThreadOut, ThreadPage
from transcripts.errors import Conflict, InvalidInput, NotFound
from transcripts.ids import is_ulid
from transcripts.models import Message

router = Router(tags=["threads"], auth=read_auth)


@router.post("/threads", response={200: ThreadOut, 201: ThreadOut, **ERRORS}, auth=ingest_auth)
def create_thread(request: HttpRequest, payload: ThreadIn) -> Status[dict[str, Any]]:
    """Create a thread (201); with a client-chosen id, repeating the call returns it (200)."""
    thread, created = ledger.create_thread(
        title=payload.title, metadata=payload.metadata, agents=payload.agents, thread_id=payload.id
    )
    if not created and thread.hidden and not caller(request).is_staff:
        raise Conflict("a thread with this id already exists", threadId=thread.id)
    return Status(201 if created else 200, thread_out(thread))


@router.get("/threads", response={200: ThreadPage, **ERRORS})
def list_threads(
    request: HttpRequest,
    q: str = Query("", max_length=500, description="Full-text search over titles and messages"),
    limit: int = Query(50, ge=1, le=200),
    cursor: str | None = Query(None, max_length=200, description="nextCursor of the last page"),
) -> dict[str, Any]:
    """Threads, most recently updated first; q searches every branch of every thread."""
    after = None
    if cursor:
        updated_at, thread_id = decode_cursor(cursor, 2)
        try:
            after = (datetime.fromisoformat(updated_at), thread_id)
        except (TypeError, ValueError):
            raise InvalidInput("cursor is not a cursor this API returned", field="cursor") from None
        if not is_ulid(thread_id):
            raise InvalidInput("cursor is not a cursor this API returned", field="cursor")
    threads = selectors.visible_threads(include_hidden=caller(request).is_staff)
    threads = selectors.search_threads(threads, clean_text(q, "q"))
    page = selectors.thread_page(threads, after=after, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    next_cursor = (
        encode_cursor(page[-1].updated_at.isoformat(), page[-1].id) if more and page else None
    )
    return {"threads": [thread_out(t) for t in page], "nextCursor": next_cursor}


@router.get("/threads/{threadId}", response={200: ThreadOut, **ERRORS})
def get_thread(request: HttpRequest, threadId: str) -> dict[str, Any]:
    """One thread."""
    return thread_out(visible_thread(request, threadId))


@router.get("/threads/{threadId}/messages", response={200: MessagePage, **ERRORS})
def thread_messages(
    request: HttpRequest,
    threadId: str,
    leaf: str | None = Query(None, description="Show the path to this message instead"),
    limit: int = Query(200, ge=1, le=1000),
    cursor: str | None = Query(None, max_length=200, description="nextCursor of the last page"),
) -> dict[str, Any]:
    """Canonical messages of the active path (or of the path to leaf), root first."""
    thread = visible_thread(request, threadId)
    leaf_message = None
    if leaf is not None:
        if is_ulid(leaf):
            leaf_message = Message.objects.filter(pk=leaf, thread=thread).first()
        if leaf_message is None:
            raise NotFound(f"message {leaf} is not in this thread", leaf=leaf)
    after_depth = -1
    if cursor:
        (after_depth,) = decode_cursor(cursor, 1)
        if type(after_depth) is not int or not -1 <= after_depth <= MAX_INT:
            raise InvalidInput("cursor is not a cursor this API returned", field="cursor")
    page = selectors.path_page(thread, leaf=leaf_message, after_depth=after_depth, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    next_cursor = encode_cursor(page[-1].depth) if more and page else None
    return {"messages": [message_out(m) for m in page], "nextCursor": next_cursor}
