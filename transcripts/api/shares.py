"""Share links: create one for a branch of a thread, list a thread's links, revoke one.

A link publishes a branch to anyone who holds it, so creating one needs both scopes a token
can have on content: `ingest` (it is a write) and `read` (a token that may not read a thread
must not publish it either); `admin` holds both. Listing needs `read`, and a browser session
listing them the editor role (as on the pages); revoking needs `ingest`. The link's URL is in
the answer of its creation only: the secret is stored hashed.
"""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from django.http import HttpRequest
from django.urls import reverse
from ninja import Router, Status

from transcripts import ledger, permissions, selectors
from transcripts.api.access import caller, get_thread_for_caller
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import NewShareOut, ShareIn, ShareList
from transcripts.errors import InvalidInput, NotFound, PermissionDenied
from transcripts.models import ShareLink, Thread
from transcripts.permissions import INGEST, READ
from transcripts.selectors.shares import share_status
from transcripts.times import NO_TIMEZONE, parse_iso_utc

router = Router(auth=read_auth)  # mounted at /shares
thread_router = Router(auth=read_auth)  # mounted at /threads: a thread's links


class ShareAnswer(TypedDict):
    """What ShareOut reads."""

    id: str
    threadId: str
    leafMessageId: str
    createdAt: datetime
    expiresAt: datetime | None
    revokedAt: datetime | None
    status: str


class NewShareAnswer(ShareAnswer):
    """What NewShareOut reads."""

    url: str


class ShareListAnswer(TypedDict):
    """What ShareList reads."""

    shares: list[ShareAnswer]


class TokenDetails(TypedDict):
    """What the audit log records of the calling token."""

    token: str
    tokenId: int | None


def share_out(share: ShareLink) -> ShareAnswer:
    """A link as the API shows it (never its secret, which is not stored)."""
    return {
        "id": share.id,
        "threadId": share.thread_id,
        "leafMessageId": share.leaf_id,
        "createdAt": share.created_at,
        "expiresAt": share.expires_at,
        "revokedAt": share.revoked_at,
        "status": share_status(share),
    }


def _expiry(value: str | None) -> datetime | None:
    """expiresAt as a moment, or InvalidInput naming what is wrong with it."""
    if value is None:
        return None
    moment = parse_iso_utc(value)
    if moment is None:
        raise InvalidInput("expiresAt must be an ISO 8601 time", field="expiresAt")
    if datetime.fromisoformat(value).tzinfo is None:
        raise InvalidInput(f"expiresAt {NO_TIMEZONE}", field="expiresAt")
    return moment


def _token_details(request: HttpRequest) -> TokenDetails:
    """What the audit log records of the calling token."""
    principal = caller(request)
    return {"token": principal.name, "tokenId": principal.token_id}


def _thread_to_share(request: HttpRequest, thread_id: str) -> Thread:
    """The thread, for a token holding both read and ingest, else NotFound or 403."""
    return get_thread_for_caller(request, thread_id, needs=[READ, INGEST])


@thread_router.post("/{threadId}/shares", response={201: NewShareOut, **ERRORS}, auth=ingest_auth)
def create_share(request: HttpRequest, threadId: str, payload: ShareIn) -> Status[NewShareAnswer]:
    """Create a link to the branch ending at leafMessageId (201); its url is shown once."""
    thread = _thread_to_share(request, threadId)
    share, secret = ledger.create_share(
        thread=thread,
        user=None,
        leaf_id=payload.leafMessageId,
        expires_at=_expiry(payload.expiresAt),
        via="api",
        **_token_details(request),
    )
    url = request.build_absolute_uri(reverse("shared", args=[secret]))
    return Status(201, {**share_out(share), "url": url})


@thread_router.get("/{threadId}/shares", response={200: ShareList, **ERRORS})
def list_shares(request: HttpRequest, threadId: str) -> ShareListAnswer:
    """The thread's links, newest first, live or not (no urls: only their hashes are kept)."""
    thread = get_thread_for_caller(request, threadId, needs=[READ])
    principal = caller(request)
    if principal.is_session and not permissions.thread_access(principal.user, thread).can_edit:
        raise PermissionDenied("listing share links needs the editor role in the project")
    return {"shares": [share_out(share) for share in selectors.thread_shares(thread)]}


@router.delete("/{shareId}", response={204: None, **ERRORS}, auth=ingest_auth)
def revoke_share(request: HttpRequest, shareId: str) -> Status[None]:
    """Revoke a link (204): its page is a 404 from now on. Revoking twice changes nothing."""
    share = selectors.share_by_id(shareId)
    refusal = NotFound(f"share {shareId} does not exist", shareId=shareId)
    if share is None:
        raise refusal
    try:
        # The thread's access decides, and a thread out of reach hides its links.
        get_thread_for_caller(request, share.thread_id, needs=[INGEST])
    except NotFound:
        raise refusal from None
    ledger.revoke_share(share=share, user=None, via="api", **_token_details(request))
    return Status(204, None)
