"""Reads of share links: a thread's links, one link by id, a secret resolved to its live link,
and the one branch (root to leaf) a link shows."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

from django.db.models import F, Q, QuerySet
from django.utils import timezone

from transcripts.ids import is_ulid
from transcripts.models import Message, ShareLink, Thread
from transcripts.selectors.paths import path_ids_to

# What secrets.token_urlsafe(32) gives: 43 URL-safe characters (256 random bits). Anything
# else is no secret this app made, and is answered without a query.
_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")


def secret_hash(secret: str) -> str:
    """SHA-256 of a link's secret: the secret is random, so a fast hash is enough."""
    return hashlib.sha256(secret.encode()).hexdigest()


def share_status(share: ShareLink, *, now: datetime | None = None) -> str:
    """ "active", "expired" or "revoked": whether the link still opens its page."""
    if share.revoked_at is not None:
        return "revoked"
    if share.expires_at is not None and share.expires_at <= (now or timezone.now()):
        return "expired"
    return "active"


def live_shares(*, now: datetime | None = None) -> QuerySet[ShareLink]:
    """Links neither revoked nor expired (their threads may still be hidden)."""
    moment = now or timezone.now()
    return ShareLink.objects.filter(revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=moment)
    )


def _thread_shares(thread: Thread) -> QuerySet[ShareLink]:
    """Every link of thread, newest first, with who created and revoked it."""
    return (
        ShareLink.objects.filter(thread=thread)
        .select_related("created_by", "revoked_by")
        .order_by("-created_at", "-id")
    )


def thread_shares(thread: Thread) -> list[ShareLink]:
    """Every link of thread, newest first, with who created and revoked it."""
    return list(_thread_shares(thread))


def share_by_id(share_id: str) -> ShareLink | None:
    """The link with this id and its thread, or None (whoever asks: callers check access)."""
    if not is_ulid(share_id):
        return None
    return ShareLink.objects.select_related("thread").filter(pk=share_id).first()


def resolve_share(secret: str, *, now: datetime | None = None) -> ShareLink | None:
    """The link a secret opens, with its thread and leaf; None for an unknown, revoked or
    expired link and for a hidden thread (a deleted thread took its links with it)."""
    if not isinstance(secret, str) or _SECRET.fullmatch(secret) is None:
        return None
    return (
        live_shares(now=now)
        .select_related("thread", "leaf")
        .defer("leaf__search")
        .filter(secret_hash=secret_hash(secret), thread__hidden=False)
        .first()
    )


def unaudited_expiries(*, now: datetime | None = None) -> QuerySet[ShareLink]:
    """Links that expired (before any revocation) and whose expiry is not audited yet."""
    moment = now or timezone.now()
    return ShareLink.objects.filter(expires_at__lte=moment, expiry_audited_at__isnull=True).filter(
        Q(revoked_at__isnull=True) | Q(revoked_at__gt=F("expires_at"))
    )


def shared_path(share: ShareLink, *, start: int = 0, limit: int | None = None) -> list[Message]:
    """The messages of the shared branch, root first (from depth start, at most limit of
    them), each with its run's model: one or two queries, whatever the branch's length."""
    leaf = share.leaf
    end = leaf.depth if limit is None else min(leaf.depth, start + limit - 1)
    # Of the run, only the model a card falls back on: a run's snapshot alone can be as large
    # as the run.
    columns = [f.name for f in Message._meta.concrete_fields if f.name != "search"]
    messages = (
        Message.objects.select_related("run")
        .only(*columns, "run__id", "run__model")
        .order_by("depth")
    )
    if leaf.active:
        # The active path above an active message is its path: read it by the depth index.
        in_branch = Q(thread_id=share.thread_id, active=True, depth__gte=start, depth__lte=end)
        return list(messages.filter(in_branch))
    ids = path_ids_to(leaf.id)[start : end + 1]
    return list(messages.filter(thread_id=share.thread_id, pk__in=ids))


def latest_shares(thread: Thread, limit: int) -> list[ShareLink]:
    """The limit newest links of thread (thread_shares, cut)."""
    return list(_thread_shares(thread)[:limit])
