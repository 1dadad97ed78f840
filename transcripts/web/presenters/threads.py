"""The thread list's rows (status badges, counters, cost and duration, preferred marks, the first
question and the search hit of each thread) and the recent threads listed beside a conversation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.http import QueryDict
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from transcripts import selectors
from transcripts.models import RunStatus, Thread
from transcripts.selectors.score_filters import ScoreCell
from transcripts.web.presenters.trace import cost_label, duration_label

PREVIEW_CHARS = 140
RECENT_THREADS = 20


@dataclass(frozen=True)
class Badge:
    """A thread's state in a word (live, failed, stopped, flagged, hidden, archived, locked),
    its tag class giving the colour."""

    word: str
    css: str
    title: str


@dataclass
class ThreadRow:
    """One line of the thread list: the thread (its counters are columns of its row), where
    it opens, and what the list shows of it."""

    thread: Thread
    url: str
    snippet: SafeString | None = None
    preferred: int = 0  # preferred marks on the thread's runs
    preview: str = ""  # the first user message on the active branch
    score: ScoreCell | None = None  # the Score column's average, when it has one

    @property
    def badges(self) -> list[Badge]:
        """The thread's states, in words: the run state first."""
        return badges_of(self.thread)

    @property
    def tokens(self) -> str:
        """Input and output tokens of its runs: "1,204 / 310"."""
        return f"{self.thread.input_tokens:,} / {self.thread.output_tokens:,}"

    @property
    def cost(self) -> str:
        """What its runs' tokens cost, in dollars ("—" when no run was priced)."""
        micros = self.thread.cost_micros
        return cost_label(micros / 1_000_000) if micros else "—"

    @property
    def duration(self) -> str:
        """How long its last closed run took ("—" before one closed)."""
        thread = self.thread
        return duration_label(thread.last_run_duration_ms / 1000) if thread.last_run_status else "—"


def badges_of(thread: Thread) -> list[Badge]:
    """A thread's status badges: live (a run open), else failed or stopped (its last run), then
    flagged, hidden, archived (when the thread has that field) and locked."""
    badges = []
    if thread.open_run_count:
        badges.append(Badge("live", "tag-live", "A run is streaming or queued"))
    elif thread.last_run_status == RunStatus.FAILED:
        badges.append(Badge("failed", "tag-failed", "Its last run failed"))
    elif thread.last_run_status == RunStatus.CANCELLED:
        badges.append(Badge("stopped", "tag-stopped", "Its last run was stopped"))
    if thread.flagged_count:
        word = f"{thread.flagged_count} message{pluralize(thread.flagged_count)} flagged"
        badges.append(Badge("flagged", "tag-error", word))
    if thread.hidden:
        badges.append(Badge("hidden", "tag-warn", "Hidden by a moderator"))
    if getattr(thread, "archived", False):
        badges.append(Badge("archived", "tag-muted", "Archived: not in the default list"))
    if thread.locked:
        badges.append(Badge("locked", "tag-muted", "Locked: no new runs"))
    return badges


def mark_hits(snippet: selectors.Snippet) -> SafeString:
    """A search snippet escaped, its hits wrapped in <mark>, an ellipsis where the message
    goes on."""
    marked = str(escape(snippet.text))
    marked = marked.replace(selectors.HIT_START, "<mark>").replace(selectors.HIT_STOP, "</mark>")
    before, after = ("…" if cut else "" for cut in (snippet.cut_before, snippet.cut_after))
    return mark_safe(f"{before}{marked}{after}")


def thread_rows(
    threads: Sequence[Thread],
    facts: selectors.ThreadListFacts,
    scores: Mapping[str, ScoreCell] | None = None,
) -> list[ThreadRow]:
    """Rows for a page of threads, their facts and their Score column's averages; a hit opens
    its branch."""
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
                url,
                snippet,
                facts.preferred.get(thread.id, 0),
                facts.previews.get(thread.id, ""),
                (scores or {}).get(thread.id),
            )
        )
    return rows


@dataclass(frozen=True)
class SortHeader:
    """A column header of the thread list: its label, and when it sorts, the link that sorts
    by it (the other way when it is the current sort) and its aria-sort."""

    label: str
    css: str
    url: str = ""
    aria_sort: str = ""  # "ascending" or "descending" on the current sort's column
    hint: str = ""


# The list's columns: label, class, and the sorts a header link toggles between (the first
# is the one a click on another column's sort gives), each with the words that say its order;
# a column without sorts is not a link.
Sorts = tuple[tuple[str, str], ...]
COLUMNS: tuple[tuple[str, str, Sorts], ...] = (
    ("Thread", "col-thread", (("title", "A to Z"),)),
    ("Messages", "col-num", (("messages", "most first"), ("messages_asc", "fewest first"))),
    ("Branches", "col-num", (("branches", "most first"), ("branches_asc", "fewest first"))),
    ("Model · agent", "col-model", ()),
    ("Tokens in / out", "col-num", (("tokens", "most first"), ("tokens_asc", "fewest first"))),
    ("Cost", "col-num", (("cost", "highest first"), ("cost_asc", "lowest first"))),
    ("Last run", "col-num", (("duration", "slowest first"), ("duration_asc", "fastest first"))),
    ("Updated", "col-when", (("recent", "latest first"), ("oldest", "earliest first"))),
)


def _with(params: QueryDict, key: str, value: str) -> str:
    """The thread list's URL with params, key set to value."""
    changed = params.copy()
    changed[key] = value
    return f"{reverse('thread_list')}?{changed.urlencode()}"


# The Score column (shown when the list has a score to show), before "Updated".
SCORE_COLUMN: Sorts = (("score", "highest first"), ("score_asc", "lowest first"))


def columns(score: str) -> tuple[tuple[str, str, Sorts], ...]:
    """The list's columns, with the Score column of score when there is one."""
    if not score:
        return COLUMNS
    return (*COLUMNS[:-1], (f"Score: {score}", "col-num col-score", SCORE_COLUMN), COLUMNS[-1])


def sort_headers(params: QueryDict, current: str, score: str = "") -> list[SortHeader]:
    """The column headers for the list sorted by current (params: the list's query, no
    cursor), with a Score column when score names one: each sortable one links to its first
    sort, or to the next when it is current."""
    headers = []
    for label, css, sorts in columns(score):
        names = [name for name, _ in sorts]
        if not names:
            headers.append(SortHeader(label, css))
            continue
        state = ""
        if current in names:
            ascending = current.endswith("_asc") or current in ("title", "oldest")
            state = "ascending" if ascending else "descending"
        target, words = sorts[(names.index(current) + 1) % len(sorts) if current in names else 0]
        hint = f"Sort by {label.lower()}, {words}"
        headers.append(SortHeader(label, css, _with(params, "sort", target), state, hint))
    return headers


@dataclass(frozen=True)
class DensityLink:
    """One side of the compact/detailed toggle."""

    label: str
    url: str
    current: bool


def density_links(params: QueryDict, density: str) -> list[DensityLink]:
    """The compact/detailed toggle: plain links (the choice is remembered in a cookie)."""
    return [
        DensityLink(name.capitalize(), _with(params, "density", name), name == density)
        for name in ("detailed", "compact")
    ]


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
