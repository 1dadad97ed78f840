"""Forks: a new thread from any message, holding the branch from the root to it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Status

from transcripts.api.access import caller, get_thread_for_caller, reads_content
from transcripts.api.auth import ingest_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import ThreadOut, ThreadStatusOut, thread_out
from transcripts.errors import NotFound
from transcripts.ledger.fork_thread import fork_thread
from transcripts.models import Message, Thread
from transcripts.permissions import INGEST
from transcripts.selectors.forks import message_to_fork

router = Router(tags=["threads"], auth=ingest_auth)


def _message_for_caller(request: HttpRequest, message_id: str) -> Message:
    """The message, if the caller may write to its thread; else NotFound (unknown, out of
    reach) or 403 (a token without the ingest scope)."""
    refusal = NotFound(f"message {message_id} does not exist", messageId=message_id)
    message = message_to_fork(message_id)
    if message is None:
        raise refusal
    try:
        get_thread_for_caller(request, message.thread_id, needs=[INGEST])
    except NotFound:
        raise refusal from None
    return message


@router.post("/{messageId}/fork", response={201: ThreadOut | ThreadStatusOut, **ERRORS})
def fork(request: HttpRequest, messageId: str) -> Status[Thread | dict[str, Any]]:
    """Start a new thread (201) holding the branch from the root to this message: new ids,
    the same content; the source is unchanged and named in `parentThreadId` and
    `metadata.forkedFrom`. A hidden thread is refused (409)."""
    message = _message_for_caller(request, messageId)
    principal = caller(request)
    thread = fork_thread(
        message=message, user=None, via="api", token=principal.name, tokenId=principal.token_id
    )
    return Status(201, thread_out(thread, content=reads_content(request)))
