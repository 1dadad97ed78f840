"""Import: parse an uploaded document, tell its format, write its threads through the ledger."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.db.models import QuerySet

from transcripts.errors import FormatError, InvalidInput
from transcripts.formats import FORMATS, detect_format, iter_chatgpt
from transcripts.ledger.import_plan import check_tree
from transcripts.ledger.importing import import_tree
from transcripts.models import Project, Thread

IMPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.importer is not None]


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


def import_data(data: Any, fmt: str | None = None, *, project: Project) -> ImportResult:
    """Import a parsed document into project: every thread in it, each in its own transaction.

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
        result.thread_ids.append(import_tree(tree, project=project).id)
    return result


def import_stream(
    fp: BinaryIO,
    fmt: str | None = None,
    *,
    project: Project,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import a file into project; a ChatGPT export is read one conversation at a time."""
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
                result.thread_ids.append(import_tree(tree, project=project).id)
                if progress is not None:
                    progress(len(result.thread_ids))
        except FormatError as exc:  # the file changed between the passes
            raise _format_error(exc) from None
        return result
    result = import_data(parse_document(fp.read()), fmt, project=project)
    if progress is not None:
        progress(len(result.thread_ids))
    return result


def iter_threads(ids: list[str]) -> QuerySet[Thread]:
    """The threads an import created, in order of creation."""
    return Thread.objects.filter(pk__in=ids).order_by("created_at")
