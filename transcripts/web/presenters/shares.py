"""Share links as the pages show them: the rows of a thread's share panel, and the message
cards of a shared branch (no switchers, no actions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from transcripts.models import Message, ShareLink
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


def share_rows(
    shares: Sequence[ShareLink], previews: dict[str, str], *, now: datetime | None = None
) -> list[ShareRow]:
    """Rows for shares, with the previews of their leaves (message id -> preview, of
    LEAF_PREVIEW_CHARS)."""
    moment = now or timezone.now()
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


def shared_start(share: ShareLink, *, start: int, size: int) -> int:
    """Where a window of size cards asked to begin at start (0-based) begins: clamped."""
    total = share.leaf.depth + 1
    return min(max(start, 0), max(total - size, 0)) if total > size else 0


def shared_page(share: ShareLink, messages: list[Message], *, start: int, size: int) -> SharedPage:
    """The cards of the branch's messages from position start (from shared_start; messages
    is selectors.shared_path of that window)."""
    total = share.leaf.depth + 1
    end = start + len(messages)
    return SharedPage(
        items=message_items(share.thread, messages),
        total=total,
        first=start + 1,
        last=end,
        earlier_start=max(start - size, 0) if start > 0 else None,
        later_start=end if end < total else None,
    )
