"""The thread list's rows (counts, models, preferred marks, the first question and the search hit
of each thread) and the recent threads listed beside a conversation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from transcripts import selectors
from transcripts.models import Thread

PREVIEW_CHARS = 140
RECENT_THREADS = 20


@dataclass
class ThreadRow:
    """One line of the thread list."""

    thread: Thread
    stats: selectors.ThreadStats
    url: str
    snippet: SafeString | None = None
    preferred: int = 0  # preferred marks on the thread's runs
    preview: str = ""  # the first user message on the active branch


def mark_hits(snippet: selectors.Snippet) -> SafeString:
    """A search snippet escaped, its hits wrapped in <mark>, an ellipsis where the message
    goes on."""
    marked = str(escape(snippet.text))
    marked = marked.replace(selectors.HIT_START, "<mark>").replace(selectors.HIT_STOP, "</mark>")
    before, after = ("…" if cut else "" for cut in (snippet.cut_before, snippet.cut_after))
    return mark_safe(f"{before}{marked}{after}")


def thread_rows(threads: Sequence[Thread], facts: selectors.ThreadListFacts) -> list[ThreadRow]:
    """Rows for a page of threads and their facts; a hit opens its branch."""
    rows = []
    for thread in threads:
        url = reverse("conversation", args=[thread.id])
        hit = facts.hits.get(thread.id)
        if hit is not None:
            url += f"?leaf={hit.message_id}#m-{hit.message_id}"
        snippet = mark_hits(hit.snippet) if hit is not None and hit.snippet.text else None
        rows.append(
            ThreadRow(
                thread,
                facts.stats[thread.id],
                url,
                snippet,
                facts.preferred.get(thread.id, 0),
                facts.previews.get(thread.id, ""),
            )
        )
    return rows


@dataclass(frozen=True)
class RecentThread:
    """One line of the recent threads beside a conversation."""

    id: str
    title: str
    updated_at: datetime
    url: str
    is_open: bool


@dataclass
class RecentThreads:
    """The most recently active readable threads beside a conversation, the open one marked;
    read (by load, one query) only when a page shows them, never for the htmx fragments."""

    load: Callable[[int], list[Thread]]  # the given number of latest threads
    open_id: str

    @cached_property
    def items(self) -> list[RecentThread]:
        """The RECENT_THREADS latest, newest activity first."""
        return [
            RecentThread(
                id=t.id,
                title=t.title,
                updated_at=t.updated_at,
                url=reverse("conversation", args=[t.id]),
                is_open=t.id == self.open_id,
            )
            for t in self.load(RECENT_THREADS)
        ]
