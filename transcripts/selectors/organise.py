"""Reads for organising threads: a reader's pins, a project's tag vocabulary, what a deletion
would take, and the `archived:` word of a search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, QuerySet

from transcripts.ids import ulid_of
from transcripts.models import Message, Run, ShareLink, Tag, Thread, ThreadPin
from transcripts.pagination import Keyset
from transcripts.permissions import User
from transcripts.selectors.pages import keyset_page

# At most this many pinned threads head a reader's list.
MAX_PINNED_SHOWN = 50

_ARCHIVED_WORDS: dict[str, bool | None] = {
    "archived:yes": True,
    "archived:no": False,
    "archived:any": None,
}


def split_archived(query: str) -> tuple[str, bool | None, bool]:
    """A search without its `archived:yes|no|any` word: the rest, what it asks (True: only
    archived threads, False: none, None: both) and whether it held one."""
    words = query.split()
    found = [w.lower() for w in words if w.lower() in _ARCHIVED_WORDS]
    if not found:
        return query, False, False
    rest = " ".join(w for w in words if w.lower() not in _ARCHIVED_WORDS)
    return rest, _ARCHIVED_WORDS[found[-1]], True


def pinned_ids(user: User, project_id: int) -> list[str]:
    """The ids of the threads of project user pinned, newest pin first."""
    if not user.is_authenticated:
        return []
    pins = ThreadPin.objects.filter(user_id=user.pk, thread__project_id=project_id)
    rows = pins.order_by("-created_at").values_list("thread_id", flat=True)
    return [ulid_of(t) for t in rows[:MAX_PINNED_SHOWN]]


def is_pinned(user: User, thread_id: str) -> bool:
    """Whether user pinned the thread."""
    if not user.is_authenticated:
        return False
    return ThreadPin.objects.filter(user_id=user.pk, thread_id=thread_id).exists()


def pinned_threads(threads: QuerySet[Thread], ids: Sequence[str], keyset: Keyset) -> list[Thread]:
    """Those of threads (already filtered) that are pinned (ids), in the list's order."""
    if not ids:
        return []
    return keyset_page(threads.filter(pk__in=ids), keyset, after=None, limit=len(ids))


def tag_vocabulary(project_id: int) -> list[str]:
    """The project's tags, by name."""
    return list(Tag.objects.filter(project_id=project_id).values_list("name", flat=True))


def tag_exists(project_id: int, name: str) -> bool:
    """Whether name is in the project's tag vocabulary."""
    return Tag.objects.filter(project_id=project_id, name=name).exists()


@dataclass(frozen=True)
class DeletionCounts:
    """What deleting threads takes with them."""

    threads: int
    messages: int
    runs: int
    shares: int


def deletion_counts(thread_ids: Sequence[str]) -> DeletionCounts:
    """How many messages, runs and share links the threads hold (one query each)."""
    messages = Message.objects.filter(thread_id__in=thread_ids).aggregate(n=Count("id"))["n"]
    runs = Run.objects.filter(thread_id__in=thread_ids).aggregate(n=Count("id"))["n"]
    shares = ShareLink.objects.filter(thread_id__in=thread_ids).aggregate(n=Count("id"))["n"]
    return DeletionCounts(len(thread_ids), messages or 0, runs or 0, shares or 0)


def threads_by_id(threads: QuerySet[Thread], ids: Sequence[str]) -> list[Thread]:
    """Those of threads whose id is in ids (with their project), in ids' order."""
    found = {t.id: t for t in threads.filter(pk__in=ids).select_related("project")}
    return [found[i] for i in ids if i in found]
