"""Import: parse an uploaded document or export zip, tell its format, write its threads through
the ledger, and report what was created and what was not kept as it was."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from django.db import transaction
from django.db.models import QuerySet

from transcripts.errors import FormatError, InvalidInput
from transcripts.formats import FORMATS, Skips, TreeThread, detect_format
from transcripts.formats.document import leaves
from transcripts.formats.sources import check_json_bytes
from transcripts.interchange.limits import check_messages, json_limits
from transcripts.interchange.threadprotocol import parse_json_lines, refuse_reimports
from transcripts.ledger.importing import TreeWriter
from transcripts.ledger.vacuum import analyze_after_import
from transcripts.models import Project, Thread

IMPORT_FORMATS = [key for key, spec in FORMATS.items() if spec.importer is not None]
# The report lists this many skipped items; skippedTotal counts them all.
REPORTED_SKIPS = 500

# Reads the source once per pass, recording what it leaves out in the Skips it is given.
TreeSource = Callable[[Skips], Iterable[TreeThread]]


class ImportReport(TypedDict):
    """What an import created and what it did not keep as it was (the skipped items)."""

    source: str
    threads: int
    messages: int
    branches: int
    filesInlined: int
    labelled: int
    skipped: list[dict[str, str]]
    skippedTotal: int
    # Canonical documents' judgement, when the import carried any.
    scores: NotRequired[int]
    feedback: NotRequired[int]


@dataclass
class ImportResult:
    """What an import created, and its report (see `import_report`)."""

    format: str
    report: ImportReport
    thread_ids: list[str] = field(default_factory=list)


def import_report(source: str, trees: list[TreeThread] | None = None) -> ImportReport:
    """An empty report for source, with the counts of trees when given."""
    report: ImportReport = {
        "source": source,
        "threads": 0,
        "messages": 0,
        "branches": 0,
        "filesInlined": 0,
        "labelled": 0,
        "skipped": [],
        "skippedTotal": 0,
    }
    for tree in trees or []:
        count_tree(report, tree)
    return report


def count_tree(report: ImportReport, tree: TreeThread) -> None:
    """Add one imported thread to the report: its messages, and its branches (its leaves)."""
    report["threads"] += 1
    report["messages"] += len(tree.messages)
    report["branches"] += len(leaves(tree)) if tree.messages else 0


def add_skips(report: ImportReport, skips: Skips) -> None:
    """Add what the readers logged: skipped items with why, files inlined, labelled parts."""
    room = max(0, REPORTED_SKIPS - len(report["skipped"]))
    report["skipped"].extend(item.as_dict() for item in skips.items[:room])
    report["skippedTotal"] += len(skips.items)
    report["filesInlined"] += skips.counts.get("assets", 0)
    report["labelled"] += skips.counts.get("labelled", 0)


def format_error(exc: FormatError) -> InvalidInput:
    """A format reader's problems as the InvalidInput callers answer with (422)."""
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


def parse_document(raw: bytes | str) -> object:
    """Parse an uploaded JSON document, or raise InvalidInput saying where it breaks (or
    which limit it passes: checked on the bytes first)."""
    check_json_bytes(raw.encode() if isinstance(raw, str) else raw, json_limits())
    try:
        value: object = json.loads(raw)
        return value
    except UnicodeDecodeError:
        raise InvalidInput("the file is not UTF-8 JSON") from None
    except RecursionError:
        raise InvalidInput("the JSON is nested too deeply") from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # a value per line: JSON Lines (ThreadProtocol branches)
            return parse_json_lines(_utf8(raw))
        raise InvalidInput(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except ValueError as exc:  # integers of thousands of digits, among others
        raise InvalidInput(f"the JSON holds a value that cannot be read: {exc}") from None


def _utf8(raw: bytes | str) -> str:
    """raw as text (UTF-8, a byte order mark dropped), or InvalidInput."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("the file is not UTF-8 JSON") from None


def resolve_format(data: object, fmt: str | None) -> str:
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


def convert(data: object, key: str, skips: Skips) -> list[TreeThread]:
    """The threads of a parsed document in format key, or InvalidInput saying what is wrong."""
    spec = FORMATS[key]
    assert spec.importer is not None
    try:
        return spec.importer(data, skips) if spec.reports_skips else spec.importer(data)
    except FormatError as exc:
        raise format_error(exc) from None


def import_data(data: object, fmt: str | None = None, *, project: Project) -> ImportResult:
    """Import a parsed document into project: every thread in it, in one transaction, so
    invalid input changes nothing."""
    key = resolve_format(data, fmt)
    skips = Skips()
    trees = convert(data, key, skips)
    if key == "threadprotocol":
        refuse_reimports(trees, project=project)
    return import_trees(key, lambda _: trees, skips=skips, project=project, locate=len(trees) > 1)


def import_trees(
    key: str,
    source: TreeSource,
    *,
    project: Project,
    skips: Skips | None = None,
    progress: Callable[[int], None] | None = None,
    locate: bool = True,
) -> ImportResult:
    """Check and write every thread source gives, in one pass and one transaction.

    Each thread is checked as it is planned; one that is refused (or a file that breaks part
    way) rolls back every thread before it, so invalid input changes nothing. Rows go to the
    database many threads at a time and source is read once, so memory stays flat for large
    exports. skips, when given, is the log the trees were already read with (source ignores
    its argument). locate puts a refused thread's problem paths inside its conversation
    (`$[3].messages[0]…`).
    """
    log = skips if skips is not None else Skips()
    result = ImportResult(key, report=import_report(key))
    try:
        with transaction.atomic(), TreeWriter(project=project) as writer:
            for index, tree in enumerate(source(log)):
                try:
                    check_messages(tree)
                    thread = writer.add(tree)
                except InvalidInput as exc:
                    if not locate:
                        raise
                    raise _in_conversation(exc, index) from None
                result.thread_ids.append(thread.id)
                count_tree(result.report, tree)
                if progress is not None:
                    progress(len(result.thread_ids))
            writer.flush()
    except FormatError as exc:
        raise format_error(exc) from None
    judged = writer.judgement
    if judged.scores or judged.feedback or judged.skipped:
        result.report["scores"], result.report["feedback"] = judged.scores, judged.feedback
        for where, why in judged.skipped:
            log.add(where, "feedback", why)
    add_skips(result.report, log)
    # Statistics of what a large import wrote, after its commit (see analyze_after_import).
    counts = result.report["threads"], result.report["messages"]
    transaction.on_commit(lambda: analyze_after_import(threads=counts[0], messages=counts[1]))
    return result


def iter_threads(ids: list[str]) -> QuerySet[Thread]:
    """The threads an import created, in order of creation."""
    return Thread.objects.filter(pk__in=ids).order_by("created_at")
