"""Share links as the pages show them: the rows of a thread's share panel, and the message
cards of a shared branch (no switchers, no actions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from transcripts import selectors
from transcripts.models import ShareLink
from transcripts.selectors.shares import share_status
from transcripts.web.presenters.messages import MessageItem, message_items

LEAF_PREVIEW_CHARS = 80


@dataclass
class ShareRow:
    """One link of the panel: who made it, when it ends, where its branch ends."""

    share: ShareLink
    status: str
    created_by: str
    leaf_preview: str

    @property
    def live(self) -> bool:
        """Whether the link still opens its page (so it may be revoked)."""
        return self.status == "active"


def share_rows(shares: Sequence[ShareLink], *, now: datetime | None = None) -> list[ShareRow]:
    """Rows for shares, the previews of their leaves read in one query."""
    moment = now or timezone.now()
    previews = selectors.message_previews([s.leaf_id for s in shares], LEAF_PREVIEW_CHARS)
    return [
        ShareRow(
            share=share,
            status=share_status(share, now=moment),
            created_by=share.created_by.get_username() if share.created_by else "an API token",
            leaf_preview=previews.get(share.leaf_id, ""),
        )
        for share in shares
    ]


@dataclass
class SharedPage:
    """A window of the shared branch: its cards, and where the windows around it start."""

    items: list[MessageItem]
    total: int  # messages in the whole branch
    first: int  # position of the first card in the branch (1-based, for people)
    last: int
    earlier_start: int | None
    later_start: int | None


def shared_page(share: ShareLink, *, start: int, size: int) -> SharedPage:
    """The cards of the branch from position start (0-based, clamped), at most size of them."""
    total = share.leaf.depth + 1
    start = min(max(start, 0), max(total - size, 0)) if total > size else 0
    messages = selectors.shared_path(share, start=start, limit=size)
    end = start + len(messages)
    return SharedPage(
        items=message_items(share.thread, messages),
        total=total,
        first=start + 1,
        last=end,
        earlier_start=max(start - size, 0) if start > 0 else None,
        later_start=end if end < total else None,
    )
