"""Export: a whole thread (every branch and run) written in any format that can hold it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from transcripts.errors import FormatError, InvalidInput, NotFound
from transcripts.formats import FORMATS, TreeThread
from transcripts.formats.threadprotocol import export_threadprotocol_branches
from transcripts.models import Event, Message, Run, Thread
from transcripts.times import to_iso

EXPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.exporter is not None]
JSON_LINES = "application/x-ndjson"


def thread_tree(
    thread: Thread, *, leaf: str | None = None, with_events: bool = False
) -> TreeThread:
    """The whole thread (every branch and run) as a TreeThread; leaf picks the active path."""
    messages = Message.objects.filter(thread=thread).order_by("depth", "id")
    canonical = [m.as_canonical() for m in messages.iterator(chunk_size=2000)]
    if leaf is not None and not any(m["id"] == leaf for m in canonical):
        raise NotFound("leaf is not a message of this thread", leaf=leaf)
    by_run: dict[str, list[str]] = {}
    for run_id, message_id in messages.order_by("run_id", "position").values_list("run", "id"):
        by_run.setdefault(run_id, []).append(message_id)
    runs = []
    for run in Run.objects.filter(thread=thread).order_by("created_at", "id"):
        item: dict[str, Any] = {
            "id": run.id,
            "status": run.status,
            "forkFromMessageId": run.fork_from_id,
            "supersededBy": run.superseded_by_id,
            "generator": run.generator,
            "model": run.model,
            "parameters": run.parameters,
            "metadata": run.metadata,
            "usage": run.usage,
            "error": run.error,
            "createdAt": to_iso(run.created_at),
            "finishedAt": to_iso(run.finished_at),
            "lastSeq": run.last_seq,
            "messageIds": by_run.get(run.id, []),
        }
        if with_events:
            item["events"] = [
                e.as_dict() for e in Event.objects.filter(run_id=run.id).order_by("seq")
            ]
        runs.append(item)
    return TreeThread(
        title=thread.title,
        messages=canonical,
        active_leaf=leaf or thread.head_id,
        metadata=thread.metadata,
        agents=thread.agents,
        id=thread.id,
        parent_thread_id=thread.parent_thread_id,
        created_at=to_iso(thread.created_at),
        updated_at=to_iso(thread.updated_at),
        runs=runs,
    )


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
    spec = FORMATS.get(fmt)
    if spec is None or spec.exporter is None:
        raise InvalidInput(
            f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}",
            field="format",
        )
    every_branch = _every_branch(branches, fmt)
    tree = thread_tree(thread, leaf=leaf, with_events=with_events and fmt == "canonical")
    try:
        exported = export_threadprotocol_branches(tree) if every_branch else spec.exporter(tree)
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


def _every_branch(branches: str | None, fmt: str) -> bool:
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
