"""Import and export of whole threads: the database side of transcripts.formats."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO, cast

from django.core.files import File
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from transcripts.errors import DomainError, InvalidInput, NotFound
from transcripts.formats import FORMATS, FormatError, TreeThread, detect_format, iter_chatgpt
from transcripts.ledger.importing import check_tree, import_tree
from transcripts.models import Event, ImportJob, ImportStatus, Message, Run, RunStatus, Thread

logger = logging.getLogger(__name__)
EXPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.exporter is not None]
IMPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.importer is not None]
# Statuses whose messages are in the tree; other runs are exported without messages.
_MATERIALIZED = (RunStatus.COMMITTED, RunStatus.SUPERSEDED)


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


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
            "createdAt": _iso(run.created_at),
            "finishedAt": _iso(run.finished_at),
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
        created_at=_iso(thread.created_at),
        updated_at=_iso(thread.updated_at),
        runs=runs,
    )


@dataclass(frozen=True)
class ExportFile:
    """An export ready to download."""

    content: str
    content_type: str
    filename: str


def export_thread(
    thread: Thread, fmt: str, *, leaf: str | None = None, with_events: bool = False
) -> ExportFile:
    """The thread in format fmt (linear formats follow the active path, or the path to leaf)."""
    spec = FORMATS.get(fmt)
    if spec is None or spec.exporter is None:
        raise InvalidInput(
            f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}",
            field="format",
        )
    tree = thread_tree(thread, leaf=leaf, with_events=with_events and fmt == "canonical")
    try:
        exported = spec.exporter(tree)
    except FormatError as exc:
        raise InvalidInput(
            f"this thread cannot be written as {fmt}: {exc}",
            problems=[{"path": p, "message": m} for p, m in exc.problems],
        ) from None
    text = exported if isinstance(exported, str) else json.dumps(exported, ensure_ascii=False)
    return ExportFile(text, spec.content_type, f"thread-{thread.id}.{spec.extension}")


@dataclass
class ImportResult:
    """What an import created."""

    format: str
    thread_ids: list[str] = field(default_factory=list)


def _format_error(exc: FormatError) -> InvalidInput:
    problems = [{"path": path, "message": message} for path, message in exc.problems]
    first = problems[0] if problems else {"path": "$", "message": "invalid document"}
    return InvalidInput(
        f"{first['path']}: {first['message']}"
        + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""),
        problems=problems,
    )


def _in_conversation(exc: InvalidInput, index: int) -> InvalidInput:
    """exc with its problem paths inside conversation index of the export."""
    problems = [
        {"path": f"$[{index}].{p.get('path', '')}", "message": p.get("message", "")}
        for p in exc.details.get("problems") or []
    ]
    return InvalidInput(f"conversation {index}: {exc.message}", problems=problems)


def parse_document(raw: bytes | str) -> Any:
    """Parse an uploaded JSON document, or raise InvalidInput saying where it breaks."""
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise InvalidInput("the file is not UTF-8 JSON") from None
    except RecursionError:
        raise InvalidInput("the JSON is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except ValueError as exc:  # integers of thousands of digits, among others
        raise InvalidInput(f"the JSON holds a value that cannot be read: {exc}") from None


def resolve_format(data: Any, fmt: str | None) -> str:
    """The import format: as asked, or detected from the document."""
    if fmt:
        spec = FORMATS.get(fmt)
        if spec is None or spec.importer is None:
            raise InvalidInput(
                f"unknown import format {fmt!r}; expected one of {', '.join(IMPORT_FORMATS)}",
                field="format",
            )
        return fmt
    detected = detect_format(data)
    if detected is None:
        raise InvalidInput(
            "could not tell the format of this file; name it with format=",
            formats=IMPORT_FORMATS,
        )
    return detected


def import_data(data: Any, fmt: str | None = None) -> ImportResult:
    """Import a parsed document: every thread in it, each in its own transaction.

    The document is validated whole before anything is written, so invalid input changes
    nothing.
    """
    key = resolve_format(data, fmt)
    importer = FORMATS[key].importer
    assert importer is not None
    try:
        trees = importer(data)
    except FormatError as exc:
        raise _format_error(exc) from None
    result = ImportResult(key)
    for tree in trees:
        result.thread_ids.append(import_tree(tree).id)
    return result


def import_stream(
    fp: BinaryIO,
    fmt: str | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import a file; a ChatGPT export is read one conversation at a time (bounded memory)."""
    head = fp.read(65536)
    fp.seek(0)
    if not head.strip(b" \t\r\n\xef\xbb\xbf"):
        raise InvalidInput("the file is empty")
    if fmt is None:
        fmt = "chatgpt" if b'"mapping"' in head else None
    if fmt == "chatgpt":
        # Two streamed passes keep memory flat and still change nothing on invalid input:
        # the first checks every conversation, the second writes them.
        try:
            for index, tree in enumerate(iter_chatgpt(fp)):
                try:
                    check_tree(tree)
                except InvalidInput as exc:
                    raise _in_conversation(exc, index) from None
        except FormatError as exc:
            raise _format_error(exc) from None
        fp.seek(0)
        result = ImportResult("chatgpt")
        try:
            for tree in iter_chatgpt(fp):
                result.thread_ids.append(import_tree(tree).id)
                if progress is not None:
                    progress(len(result.thread_ids))
        except FormatError as exc:  # the file changed between the passes
            raise _format_error(exc) from None
        return result
    result = import_data(parse_document(fp.read()), fmt)
    if progress is not None:
        progress(len(result.thread_ids))
    return result


def iter_threads(ids: list[str]) -> QuerySet[Thread]:
    """The threads an import created, in order of creation."""
    return Thread.objects.filter(pk__in=ids).order_by("created_at")


def chunks(text: str, size: int = 65536) -> Iterator[str]:
    """Split an export for a streamed response."""
    for start in range(0, len(text), size):
        yield text[start : start + size]


def queue_import(
    *, content: IO[bytes], filename: str, size: int, fmt: str | None, user: Any = None
) -> ImportJob:
    """Store an upload and queue it for a worker; the job reports progress as it goes."""
    if fmt:
        resolve_format(None, fmt)
    job = ImportJob(
        user=user if getattr(user, "is_authenticated", False) else None,
        format=fmt or "",
        filename=filename[:300],
        size=size,
    )
    job.file.save(f"{job.id}.json", File(content), save=False)
    with transaction.atomic():
        job.save(force_insert=True)
        from transcripts.generation import tasks

        transaction.on_commit(lambda: tasks.import_file.enqueue(job.id))
    return job


def run_import_job(job_id: str) -> ImportJob:
    """The worker's side of queue_import: import the stored file, recording progress."""
    job = ImportJob.objects.get(pk=job_id)
    if job.status != ImportStatus.QUEUED:
        return job
    ImportJob.objects.filter(pk=job.pk).update(status=ImportStatus.RUNNING)
    last_update = 0.0
    with job.file.open("rb") as handle:

        def progress(count: int) -> None:
            nonlocal last_update
            now = time.monotonic()
            if now - last_update >= 0.5:
                last_update = now
                ImportJob.objects.filter(pk=job.pk).update(bytes_done=handle.tell())

        try:
            result = import_stream(cast(BinaryIO, handle), job.format or None, progress=progress)
        except DomainError as exc:
            job.status = ImportStatus.FAILED
            job.error = {"code": exc.code, "message": exc.message, "details": exc.details}
        except Exception:
            # Never leave a job "running" forever: the poller learns it failed.
            logger.exception("import job %s failed", job.pk)
            job.status = ImportStatus.FAILED
            job.error = {"code": "internal", "message": "the import failed", "details": {}}
        else:
            job.status = ImportStatus.DONE
            job.format = result.format
            job.thread_ids = result.thread_ids
            job.bytes_done = job.size
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "format", "thread_ids", "bytes_done", "error", "finished_at"])
    job.file.delete(save=False)
    return job
