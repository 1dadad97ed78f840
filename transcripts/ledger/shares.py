"""Share links: a read-only link to one branch of a thread (root to a leaf), opened without
login. The secret is 256 random bits, returned once and stored as its SHA-256. Creating and
revoking a link are audited at once; an expiry by the workers' sweep, once per link."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.utils import timezone

from transcripts.errors import Conflict, InvalidInput
from transcripts.ids import is_ulid
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import require
from transcripts.models import Message, ShareLink, Thread
from transcripts.permissions import User, member_access
from transcripts.selectors.shares import secret_hash, unaudited_expiries

SECRET_BYTES = 32  # 256 bits: unguessable, so a link cannot be found by trying
EXPIRY_BATCH = 500  # expiries one sweep audits: a backlog never holds locks for long


def _leaf(thread: Thread, leaf_id: str | None) -> Message:
    """The message the shared branch ends at: leaf_id, a message of thread, else its head."""
    if leaf_id is None:
        head = Message.objects.defer("search").filter(pk=thread.head_id).first()
        if head is None:
            raise InvalidInput("the thread has no messages to share", field="leafMessageId")
        return head
    leaf = (
        Message.objects.defer("search").filter(pk=leaf_id, thread_id=thread.id).first()
        if is_ulid(leaf_id)
        else None
    )
    if leaf is None:
        raise InvalidInput(
            f"leafMessageId {leaf_id} is not a message of this thread", field="leafMessageId"
        )
    return leaf


def _expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    """expires_at if it lies in the future (with a timezone), else InvalidInput."""
    if expires_at is None:
        return None
    if expires_at.tzinfo is None:
        raise InvalidInput("expiresAt must carry a timezone (e.g. Z)", field="expiresAt")
    if expires_at <= now:
        raise InvalidInput("expiresAt must lie in the future", field="expiresAt")
    return expires_at


def _by(user: User | None) -> User:
    """Who the audit log names: the member, or nobody for a token (its name is in details)."""
    return user if user is not None else AnonymousUser()


def create_share(
    *,
    thread: Thread,
    user: User | None,
    leaf_id: str | None = None,
    expires_at: datetime | None = None,
    via: str = "web",
    **audit_details: Any,
) -> tuple[ShareLink, str]:
    """A link to the branch from the root to leaf_id (default: the head), and its secret
    (returned once, never stored). user must edit the thread's project; None is an API token
    whose scopes the API checked (audit_details name it)."""
    if user is not None:
        access = member_access(user, thread_id=thread.id)
        require(user.is_authenticated and access.can_edit, "share threads")
    if thread.hidden:
        raise Conflict("a hidden thread cannot be shared: unhide it first", threadId=thread.id)
    now = timezone.now()
    leaf = _leaf(thread, leaf_id)
    expiry = _expiry(expires_at, now)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    with transaction.atomic():
        share = ShareLink.objects.create(
            project_id=thread.project_id,
            thread=thread,
            leaf=leaf,
            secret_hash=secret_hash(secret),
            created_by=user if user is not None and user.is_authenticated else None,
            created_at=now,
            expires_at=expiry,
        )
        record_audit(
            _by(user),
            "create_share",
            share,
            thread_id=thread.id,
            leafMessageId=leaf.id,
            expiresAt=expiry.isoformat() if expiry is not None else None,
            via=via,
            **audit_details,
        )
    return share, secret


def revoke_share(
    *, share: ShareLink, user: User | None, via: str = "web", **audit_details: Any
) -> bool:
    """Revoke a link: its page is a 404 from now on. Whether this call revoked it (revoking
    twice writes nothing the second time). user: as for create_share."""
    if user is not None:
        access = member_access(user, thread_id=share.thread_id)
        require(user.is_authenticated and access.can_edit, "revoke share links")
    with transaction.atomic():
        stored = ShareLink.objects.select_for_update().get(pk=share.pk)
        if stored.revoked_at is not None:
            share.revoked_at, share.revoked_by_id = stored.revoked_at, stored.revoked_by_id
            return False
        share.revoked_at = timezone.now()
        share.revoked_by = user if user is not None and user.is_authenticated else None
        share.save(update_fields=["revoked_at", "revoked_by"])
        record_audit(
            _by(user), "revoke_share", share, thread_id=share.thread_id, via=via, **audit_details
        )
    return True


def audit_expired_shares(*, now: datetime | None = None) -> list[str]:
    """Record in the audit log each link that expired since the last sweep (once per link,
    whichever worker gets it); the ids of those recorded."""
    moment = now or timezone.now()
    with transaction.atomic():
        due = list(
            unaudited_expiries(now=moment)
            .select_related("project")
            .select_for_update(skip_locked=True, of=("self",))
            .order_by("expires_at")[:EXPIRY_BATCH]
        )
        for share in due:
            assert share.expires_at is not None
            record_audit(
                AnonymousUser(),
                "expire_share",
                share,
                thread_id=share.thread_id,
                project=share.project,
                expiredAt=share.expires_at.isoformat(),
            )
        ShareLink.objects.filter(pk__in=[s.pk for s in due]).update(expiry_audited_at=moment)
    return [share.id for share in due]
