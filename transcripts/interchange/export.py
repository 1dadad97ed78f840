"""Export: a whole thread (every branch and run) written in any format that can hold it."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from transcripts.errors import FormatError, InvalidInput, NotFound
from transcripts.formats import FORMATS, FormatSpec, TreeThread
from transcripts.formats.threadprotocol import export_threadprotocol_branches
from transcripts.ids import ulid_from_bytes
from transcripts.jsonvalue import JsonObject
from transcripts.message_schema import message_object
from transcripts.models import Event, Feedback, Run, Score, Thread
from transcripts.selectors.exports import tree_rows
from transcripts.times import to_iso

EXPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.exporter is not None]
JSON_LINES = "application/x-ndjson"


def thread_tree(
    thread: Thread,
    *,
    leaf: str | None = None,
    with_events: bool = False,
    with_judgement: bool = False,
) -> TreeThread:
    """The whole thread (every branch and run) as a TreeThread; leaf picks the active path;
    with_judgement adds its scores and feedback."""
    with no_collection():
        tree = _read_tree(thread, leaf=leaf, with_events=with_events)
    if with_judgement:
        tree.scores, tree.feedback = judgement_of(thread)
    return tree


def judgement_of(thread: Thread) -> tuple[list[JsonObject], list[JsonObject]]:
    """The thread's scores and feedback as the canonical format writes them: who (username,
    or the token's name), when, the source, name, value or label, comment and target."""
    scores: list[JsonObject] = [
        {
            "id": str(score.id),
            "name": score.name,
            "value": score.value,
            "label": score.label,
            "comment": score.comment,
            "source": score.source,
            "messageId": str(score.message_id) if score.message_id else None,
            "runId": str(score.run_id) if score.run_id else None,
            "author": score.author.username if score.author else None,
            "token": score.token.name if score.token else None,
            "externalId": score.external_id,
            "createdAt": to_iso(score.created_at),
            "updatedAt": to_iso(score.updated_at),
        }
        for score in Score.objects.filter(thread=thread)
        .select_related("author", "token")
        .order_by("created_at", "id")
    ]
    feedback: list[JsonObject] = [
        {
            "messageId": str(item.message_id),
            "user": item.user.username,
            "up": item.up,
            "comment": item.comment,
            "createdAt": to_iso(item.created_at),
            "updatedAt": to_iso(item.updated_at),
        }
        for item in Feedback.objects.filter(thread=thread)
        .select_related("user")
        .order_by("created_at", "id")
    ]
    return scores, feedback


@contextmanager
def no_collection() -> Iterator[None]:
    """Hold off the cyclic garbage collector while a big thread is read."""
    # Reading builds tens of thousands of dicts and lists, none of them garbage: each round of
    # the collector walks them all again (a third of the time of a 5,000-message export).
    # Nothing read is cyclic, so waiting until the end loses nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _read_tree(thread: Thread, *, leaf: str | None, with_events: bool) -> TreeThread:
    """thread_tree's reading, with the collector held off."""
    # Plain rows, not model instances: a big thread has thousands of messages and runs, and
    # a Run instance would also load its snapshot, which no export writes. The messages come
    # as PostgreSQL's text, decoded here (json.loads, as Django's JSONField would, without
    # its converters: a third of the read).
    canonical: list[JsonObject] = []
    in_runs: list[tuple[str, int, str]] = []
    loads = json.loads
    for batch in tree_rows(thread, 2000):
        for key, parent, run_key, role, parts, metadata, created, position in batch:
            message_id = ulid_from_bytes(key)
            canonical.append(
                message_object(
                    message_id,
                    None if parent is None else ulid_from_bytes(parent),
                    role,
                    loads(parts),
                    created,
                    loads(metadata),
                )
            )
            in_runs.append((ulid_from_bytes(run_key), position, message_id))
    if leaf is not None and not any(m["id"] == leaf for m in canonical):
        raise NotFound("leaf is not a message of this thread", leaf=leaf)
    by_run: dict[str, list[str]] = {}
    for run_id, _, message_id in sorted(in_runs):
        by_run.setdefault(run_id, []).append(message_id)
    rows_of_runs = list(
        Run.objects.filter(thread=thread)
        .order_by("created_at", "id")
        .annotate(
            created_text=Cast("created_at", TextField()),
            finished_text=Cast("finished_at", TextField()),
        )
        .values(*_RUN_FIELDS)
    )
    events = events_by_run(thread, [run["id"] for run in rows_of_runs]) if with_events else {}
    runs = [
        run_item(run, by_run.get(run["id"], []), events, with_events=with_events)
        for run in rows_of_runs
    ]
    return tree_of(thread, canonical, active_leaf=leaf or thread.head_id, runs=runs)


def tree_of(
    thread: Thread,
    messages: list[JsonObject],
    *,
    active_leaf: str | None,
    runs: list[JsonObject] | None = None,
) -> TreeThread:
    """The document of thread (its row's title, metadata, agents, ids and times) holding
    messages and runs."""
    return TreeThread(
        title=thread.title,
        messages=messages,
        active_leaf=active_leaf,
        metadata=thread.metadata,
        agents=thread.agents,
        id=thread.id,
        parent_thread_id=thread.parent_thread_id,
        created_at=to_iso(thread.created_at),
        updated_at=to_iso(thread.updated_at),
        runs=runs or [],
    )


def events_by_run(thread: Thread, run_ids: list[str]) -> dict[str, list[JsonObject]]:
    """Every run's events in wire form, in order: a query per EVENT_BATCH runs, not per run."""
    found: dict[str, list[JsonObject]] = {}
    for start in range(0, len(run_ids), EVENT_BATCH):
        batch = run_ids[start : start + EVENT_BATCH]
        events = Event.objects.filter(thread=thread, run_id__in=batch).order_by("run_id", "seq")
        for event in events.iterator(chunk_size=2000):
            found.setdefault(event.run_id, []).append(event.as_dict())
    return found


EVENT_BATCH = 500


def postgres_moment(text: str) -> datetime:
    """A timestamp PostgreSQL wrote as text (ISO style), as the aware UTC datetime Django reads."""
    # Django reads timestamptz through psycopg's pure-Python loader (3.7 µs a value: 35 ms for
    # a 5,000-message thread); text and fromisoformat take a third of that.
    return datetime.fromisoformat(text).astimezone(UTC)


_RUN_FIELDS = (
    "id", "status", "fork_from_id", "superseded_by_id", "generator", "model", "parameters",
    "metadata", "usage", "error", "created_text", "finished_text", "last_seq",
)  # fmt: skip


def run_item(
    run: dict[str, Any],
    message_ids: list[str],
    events: dict[str, list[JsonObject]],
    *,
    with_events: bool,
) -> JsonObject:
    """A run of the canonical document, from its row (_RUN_FIELDS, times as PostgreSQL's text),
    its messages' ids and (with_events) the events of the runs read."""
    finished = run["finished_text"]
    item: JsonObject = {
        "id": run["id"],
        "status": run["status"],
        "forkFromMessageId": run["fork_from_id"],
        "supersededBy": run["superseded_by_id"],
        "generator": run["generator"],
        "model": run["model"],
        "parameters": run["parameters"],
        "metadata": run["metadata"],
        "usage": run["usage"],
        "error": run["error"],
        "createdAt": to_iso(postgres_moment(run["created_text"])),
        "finishedAt": None if finished is None else to_iso(postgres_moment(finished)),
        "lastSeq": run["last_seq"],
        "messageIds": message_ids,
    }
    if with_events:
        item["events"] = events.get(run["id"], [])
    return item


@dataclass(frozen=True)
class ExportFile:
    """An export ready to download."""

    content: str
    content_type: str
    filename: str


def export_thread(
    thread: Thread,
    fmt: str,
    *,
    leaf: str | None = None,
    with_events: bool = False,
    branches: str | None = None,
) -> ExportFile:
    """The thread in format fmt (linear formats follow the active path, or the path to leaf).

    branches="all" (ThreadProtocol only) adds one child thread per other branch, as JSON Lines.
    """
    spec = export_spec(fmt)
    exporter = spec.exporter
    assert exporter is not None  # export_spec refuses the formats that only import
    every_branch = wants_every_branch(branches, fmt)
    canonical = fmt == "canonical"
    tree = thread_tree(
        thread, leaf=leaf, with_events=with_events and canonical, with_judgement=canonical
    )
    try:
        exported = export_threadprotocol_branches(tree) if every_branch else exporter(tree)
    except FormatError as exc:
        raise InvalidInput(
            f"this thread cannot be written as {fmt}: {exc}",
            problems=[{"path": p, "message": m} for p, m in exc.problems],
        ) from None
    if every_branch:
        lines = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in exported)
        return ExportFile(lines, JSON_LINES, f"thread-{thread.id}.jsonl")
    text = exported if isinstance(exported, str) else json.dumps(exported, ensure_ascii=False)
    return ExportFile(text, spec.content_type, f"thread-{thread.id}.{spec.extension}")


def export_spec(fmt: str) -> FormatSpec:
    """The format fmt names, or InvalidInput listing the formats an export writes."""
    spec = FORMATS.get(fmt)
    if spec is None or spec.exporter is None:
        raise InvalidInput(
            f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}",
            field="format",
        )
    return spec


def wants_every_branch(branches: str | None, fmt: str) -> bool:
    """Whether branches asks for every branch, which only ThreadProtocol writes apart."""
    if branches in (None, "", "active"):
        return False
    if branches != "all":
        raise InvalidInput("branches must be 'active' or 'all'", field="branches", value=branches)
    if fmt != "threadprotocol":
        raise InvalidInput(
            "branches=all is for format=threadprotocol (canonical JSON holds every branch "
            "already; the other formats hold one path)",
            field="branches",
        )
    return True


def chunks(text: str, size: int = 65536) -> Iterator[str]:
    """Split an export for a streamed response."""
    for start in range(0, len(text), size):
        yield text[start : start + size]
