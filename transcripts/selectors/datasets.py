"""The reads behind a dataset: which threads, and each one's message tree, runs and ratings.

Threads come in batches by id (a keyset walk, so memory holds one batch, never a project);
hidden threads never enter, whoever asks, and deleted ones are gone from the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet

from transcripts.ids import ulid_of
from transcripts.models import (
    Feedback,
    Message,
    Project,
    Run,
    RunRating,
    RunStatus,
    Score,
    Thread,
)
from transcripts.pagination import Keyset
from transcripts.selectors.pages import keyset_batches
from transcripts.selectors.threads import filter_threads, search_threads

THREAD_BATCH = 50
BY_ID = Keyset("id")
# Runs whose answers a dataset may hold: what was committed, kept or replaced.
MATERIALIZED = (RunStatus.COMMITTED, RunStatus.SUPERSEDED)


@dataclass(frozen=True)
class ThreadFilters:
    """Which threads a dataset keeps: search words, a date range (on the last update, or on
    creation), a model and an agent named, only branched or only rated threads."""

    search: str = ""
    by_update: bool = True
    since: date | None = None
    until: date | None = None
    model: str = ""
    agent: str = ""
    branched: bool = False
    rated_only: bool = False
    scored: str = ""  # only threads with a score of this name (with a value)
    liked: bool = False  # only threads with a 👍 on an answer


def dataset_threads(project: Project, filters: ThreadFilters) -> QuerySet[Thread]:
    """The project's visible threads that the filters keep."""
    threads = Thread.objects.filter(project=project, hidden=False)
    threads = search_threads(threads, filters.search)
    if filters.by_update:
        threads = filter_threads(threads, since=filters.since, until=filters.until)
    else:
        if filters.since is not None:
            threads = threads.filter(created_at__date__gte=filters.since)
        if filters.until is not None:
            threads = threads.filter(created_at__date__lte=filters.until)
    if filters.model:
        runs = Run.objects.filter(thread_id=OuterRef("pk"), model__icontains=filters.model)
        threads = threads.filter(Exists(runs))
    if filters.agent:
        agents = Message.objects.filter(
            thread_id=OuterRef("pk"), metadata__agentId__icontains=filters.agent
        )
        threads = threads.filter(Exists(agents) | Q(agents__icontains=filters.agent))
    if filters.branched:
        # A fork point leaves a message off the active path.
        threads = filter_threads(threads, has_branches=True)
    if filters.rated_only:
        threads = threads.filter(
            Exists(RunRating.objects.filter(thread_id=OuterRef("pk"), preferred=True))
        )
    if filters.scored:
        scores = Score.objects.filter(
            project=project, name=filters.scored, value__isnull=False, thread_id=OuterRef("pk")
        )
        threads = threads.filter(Exists(scores))
    if filters.liked:
        threads = threads.filter(Exists(Feedback.objects.filter(thread_id=OuterRef("pk"), up=True)))
    return threads


@dataclass(frozen=True)
class Node:
    """A message of the tree with what a dataset reads of it."""

    id: str
    parent_id: str | None
    run_id: str
    depth: int
    role: str
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    active: bool
    redacted: bool

    def as_canonical(self) -> dict[str, Any]:
        """The canonical message the format shapes read (without createdAt)."""
        return Message.canonical_dict(
            id=self.id,
            parent_id=self.parent_id,
            role=self.role,
            parts=self.parts,
            metadata=self.metadata,
            created_at=None,
        )


@dataclass(frozen=True)
class RunFacts:
    """What a dataset reads of a run: its status, model and preferred marks."""

    status: str
    model: str
    preferred: int = 0
    last_preferred_at: datetime | None = None


@dataclass
class ThreadTree:
    """One thread's messages as a tree, with its runs."""

    thread: Thread
    nodes: dict[str, Node] = field(default_factory=dict)
    children: dict[str | None, list[Node]] = field(default_factory=dict)
    runs: dict[str, RunFacts] = field(default_factory=dict)
    # The values of the scores a dataset reads (one name), by the message or run they judge.
    scores: dict[str, list[float]] = field(default_factory=dict)
    # (👍, 👎) counts by answer, when a dataset reads feedback.
    feedback: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, node: Node) -> None:
        """Put node in the tree (children kept in id order, which is creation order)."""
        self.nodes[node.id] = node
        self.children.setdefault(node.parent_id, []).append(node)

    def path_to(self, node: Node) -> list[Node]:
        """The messages from the root down to node."""
        path: list[Node] = []
        current: Node | None = node
        while current is not None:
            path.append(current)
            current = self.nodes.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def active_path(self) -> list[Node]:
        """The thread's active messages, root first."""
        return sorted((n for n in self.nodes.values() if n.active), key=lambda n: n.depth)

    def leaves(self) -> list[Node]:
        """Messages without children, in id order."""
        return sorted(
            (n for n in self.nodes.values() if n.id not in self.children), key=lambda n: n.id
        )


def _runs_of(thread_ids: list[str]) -> dict[str, dict[str, RunFacts]]:
    """thread id -> run id -> facts, for the materialized runs of the threads (two queries)."""
    marks = {
        ulid_of(run_id): (n, at)
        for run_id, n, at in RunRating.objects.filter(thread_id__in=thread_ids, preferred=True)
        .values("run_id")
        .annotate(n=Count("id"), at=Max("created_at"))
        .values_list("run_id", "n", "at")
    }
    result: dict[str, dict[str, RunFacts]] = {t: {} for t in thread_ids}
    rows = Run.objects.filter(thread_id__in=thread_ids, status__in=MATERIALIZED).values_list(
        "id", "thread_id", "status", "model"
    )
    for run_id, thread_id, status, model in rows:
        count, at = marks.get(ulid_of(run_id), (0, None))
        result[ulid_of(thread_id)][ulid_of(run_id)] = RunFacts(status, model, count, at)
    return result


def _judgement_of(trees: dict[str, ThreadTree], score_name: str, feedback: bool) -> None:
    """Fill the trees' scores named score_name (when given) and feedback counts (when asked):
    one query each."""
    ids = list(trees)
    if score_name:
        rows = Score.objects.filter(thread_id__in=ids, name=score_name, value__isnull=False)
        for thread_id, message_id, run_id, value in rows.values_list(
            "thread_id", "message_id", "run_id", "value"
        ):
            target = ulid_of(message_id or run_id or thread_id)
            if value is not None:
                trees[ulid_of(thread_id)].scores.setdefault(target, []).append(value)
    if feedback:
        counts = (
            Feedback.objects.filter(thread_id__in=ids)
            .values("thread_id", "message_id")
            .annotate(ups=Count("pk", filter=Q(up=True)), downs=Count("pk", filter=Q(up=False)))
            .values_list("thread_id", "message_id", "ups", "downs")
        )
        for thread_id, message_id, up, down in counts:
            trees[ulid_of(thread_id)].feedback[ulid_of(message_id)] = (up, down)


def thread_trees(
    threads: QuerySet[Thread],
    *,
    active_only: bool = False,
    score_name: str = "",
    feedback: bool = False,
) -> Iterator[ThreadTree]:
    """Each thread's tree (only its active path with active_only; with the values of the
    scores named score_name and the feedback counts when asked), one batch of threads in
    memory at a time."""
    for batch in keyset_batches(threads, BY_ID, THREAD_BATCH):
        ids = [t.id for t in batch]
        trees = {t.id: ThreadTree(thread=t) for t in batch}
        for thread_id, runs in _runs_of(ids).items():
            trees[thread_id].runs = runs
        _judgement_of(trees, score_name, feedback)
        messages = Message.objects.filter(thread_id__in=ids)
        if active_only:
            messages = messages.filter(active=True)
        rows = messages.order_by("thread_id", "depth", "id").values_list(
            "id",
            "thread_id",
            "parent_id",
            "run_id",
            "depth",
            "role",
            "parts",
            "metadata",
            "active",
            "redacted_at",
        )
        for row in rows.iterator(chunk_size=2000):
            message_id, thread_id, parent_id, run_id, depth, role = row[:6]
            parts, metadata, active, redacted_at = row[6:]
            metadata = metadata if isinstance(metadata, dict) else {}
            trees[ulid_of(thread_id)].add(
                Node(
                    id=ulid_of(message_id),
                    parent_id=ulid_of(parent_id) if parent_id else None,
                    run_id=ulid_of(run_id),
                    depth=depth,
                    role=role,
                    parts=parts if isinstance(parts, list) else [],
                    metadata=metadata,
                    active=active,
                    redacted=redacted_at is not None or metadata.get("redacted") is True,
                )
            )
        yield from (trees[t] for t in ids)
