"""Reads of forks: threads started from a message of another thread ("New thread from here").

A fork's `parent_thread` is its source and its metadata's `forkedFrom` names the message
(`ledger/fork_thread.py`); these reads give a thread's source and the forks of its messages.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from django.db.models import QuerySet

from transcripts.ids import is_ulid
from transcripts.jsonvalue import as_object, as_str
from transcripts.models import Message, Thread

# Forks of one message a page lists by name; more are counted.
LISTED_FORKS = 5


@dataclass(frozen=True)
class ForkSource:
    """Where a fork came from: the source's title, the message's position on its branch, and
    the source thread and message ids when the reader may still open them ("" if not)."""

    title: str
    position: int
    thread_id: str
    message_id: str


@dataclass(frozen=True)
class ForkLink:
    """A thread started from a message: its id and title."""

    thread_id: str
    title: str


@dataclass(frozen=True)
class MessageForks:
    """The threads started from one message: up to LISTED_FORKS of them, and how many more."""

    links: list[ForkLink]
    more: int

    @property
    def total(self) -> int:
        """How many threads were started from the message."""
        return len(self.links) + self.more


def message_to_fork(message_id: str) -> Message | None:
    """The message a fork would start from (its thread not loaded), or None."""
    if not is_ulid(message_id):
        return None
    return Message.objects.defer("search").filter(pk=message_id).first()


def fork_source(thread: Thread, readable: QuerySet[Thread]) -> ForkSource | None:
    """Where thread was forked from (None when it was not), with links only into a source
    the reader may read."""
    forked = as_object(thread.metadata.get("forkedFrom"))
    if forked is None:
        return None
    source_id = as_str(forked.get("threadId")) or ""
    # The source's title now (it may have been renamed), else the one it had at the fork.
    title = (
        readable.filter(pk=source_id).values_list("title", flat=True).first()
        if is_ulid(source_id)
        else None
    )
    reachable = title is not None
    return ForkSource(
        title=title if title is not None else as_str(forked.get("title")) or "",
        position=position if isinstance(position := forked.get("position"), int) else 0,
        thread_id=source_id if reachable else "",
        message_id=(as_str(forked.get("messageId")) or "") if reachable else "",
    )


def forks_of(
    thread: Thread, message_ids: Collection[str], readable: QuerySet[Thread]
) -> dict[str, MessageForks]:
    """For each of message_ids that threads the reader may read were started from: up to
    LISTED_FORKS of them (oldest first) and how many more there are."""
    if not message_ids:
        return {}
    rows = (
        readable.filter(
            parent_thread_id=thread.id, metadata__forkedFrom__messageId__in=list(message_ids)
        )
        .order_by("created_at", "id")
        .values_list("id", "title", "metadata__forkedFrom__messageId")
    )
    grouped: dict[str, list[ForkLink]] = defaultdict(list)
    for thread_id, title, message_id in rows:
        grouped[str(message_id)].append(ForkLink(str(thread_id), title))
    return {
        message_id: MessageForks(links[:LISTED_FORKS], max(0, len(links) - LISTED_FORKS))
        for message_id, links in grouped.items()
    }
