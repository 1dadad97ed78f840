"""The thread list's rows: counts, models, preferred marks and the search hit of each thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from transcripts import selectors
from transcripts.models import Thread


@dataclass
class ThreadRow:
    """One line of the thread list."""

    thread: Thread
    stats: selectors.ThreadStats
    url: str
    snippet: SafeString | None = None
    preferred: int = 0  # preferred marks on the thread's runs


def mark_hits(snippet: str) -> SafeString:
    """A search snippet escaped, its hits wrapped in <mark>."""
    marked = str(escape(snippet))
    marked = marked.replace(selectors.HIT_START, "<mark>").replace(selectors.HIT_STOP, "</mark>")
    return mark_safe(marked)


def thread_rows(threads: Sequence[Thread], query: str) -> list[ThreadRow]:
    """Rows for a page of threads (a constant number of queries); a hit opens its branch."""
    ids = [t.id for t in threads]
    stats = selectors.thread_stats(ids)
    hits = selectors.search_hits(ids, query)
    preferred = selectors.preferred_counts(ids)
    rows = []
    for thread in threads:
        url = reverse("conversation", args=[thread.id])
        hit = hits.get(thread.id)
        if hit is not None:
            url += f"?leaf={hit.message_id}#m-{hit.message_id}"
        snippet = mark_hits(hit.snippet) if hit is not None and hit.snippet else None
        rows.append(ThreadRow(thread, stats[thread.id], url, snippet, preferred.get(thread.id, 0)))
    return rows
