"""Datasets from conversations: preference pairs from fork points, multi-turn chat rows from
paths, streamed as JSON Lines in the formats trainers load. Reads only (see docs/datasets.md).

`rows` yields every row (and every row left out, with why) of one project, one batch of threads
in memory at a time; `jsonl_lines` is the file; `summarize` counts it and keeps a preview.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from transcripts.datasets.pairs_and_paths import Skipped, chat_paths, preference_pairs
from transcripts.datasets.query import (
    FORMATS,
    KINDS,
    PREFERENCES,
    SFT,
    DatasetQuery,
    parse_query,
)
from transcripts.datasets.shapes import ShapeMismatch, chat_record, preference_record
from transcripts.models import Project
from transcripts.selectors.datasets import dataset_threads, thread_trees

__all__ = [
    "FORMATS",
    "KINDS",
    "DatasetQuery",
    "Row",
    "Skipped",
    "Summary",
    "jsonl_lines",
    "parse_query",
    "rows",
    "summarize",
]


@dataclass(frozen=True)
class Row:
    """One line of the dataset, and where it comes from."""

    record: dict[str, Any]
    thread_id: str
    fork_message_id: str | None = None


def rows(project: Project, query: DatasetQuery) -> Iterator[Row | Skipped]:
    """Every row of the dataset, in thread order, and each row left out with its reason."""
    active_only = query.kind == SFT and query.branches == "active"
    for tree in thread_trees(
        dataset_threads(project, query.thread_filters),
        active_only=active_only,
        score_name=query.judged_by,
        feedback=query.kind == SFT and query.liked,
    ):
        tree.thread.project = project
        if query.kind == PREFERENCES:
            for pair in preference_pairs(tree, query):
                if isinstance(pair, Skipped):
                    yield pair
                    continue
                try:
                    record = preference_record(pair, query.format, metadata=query.metadata)
                except ShapeMismatch as mismatch:
                    yield Skipped(str(mismatch), tree.thread.id)
                    continue
                yield Row(record, tree.thread.id, pair.fork.id)
        else:
            for path in chat_paths(tree, query):
                if isinstance(path, Skipped):
                    yield path
                    continue
                yield Row(chat_record(path, query.format, metadata=query.metadata), tree.thread.id)


def jsonl_lines(project: Project, query: DatasetQuery) -> Iterator[str]:
    """The dataset as JSON Lines, one row per line."""
    for item in rows(project, query):
        if isinstance(item, Row):
            yield json.dumps(item.record, ensure_ascii=False, separators=(",", ":")) + "\n"


@dataclass
class Summary:
    """How many rows a dataset has, from how many threads and fork points, what was left out
    and why, and its first rows."""

    rows: int = 0
    threads: int = 0
    fork_points: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    preview: list[dict[str, Any]] = field(default_factory=list)


def summarize(project: Project, query: DatasetQuery, *, preview: int = 5) -> Summary:
    """Count the dataset (reading it through once) and keep its first rows."""
    summary = Summary()
    threads: set[str] = set()
    forks: set[str] = set()
    for item in rows(project, query):
        if isinstance(item, Skipped):
            summary.skipped[item.reason] = summary.skipped.get(item.reason, 0) + 1
            continue
        summary.rows += 1
        threads.add(item.thread_id)
        if item.fork_message_id is not None:
            forks.add(item.fork_message_id)
        if len(summary.preview) < preview:
            summary.preview.append(item.record)
    summary.threads, summary.fork_points = len(threads), len(forks)
    return summary
