"""Export zips: a ChatGPT export (every `conversations-NNN.json` split, images and Canvas
documents inlined from the zip), a Claude.ai export, or a zip holding one JSON document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

from transcripts.errors import FormatError, InvalidInput
from transcripts.formats import FORMATS, Skips, TreeThread, iter_chatgpt
from transcripts.formats.chatgpt_parts import ExportContext
from transcripts.formats.claude_ai import iter_claude_ai
from transcripts.formats.sources import guarded
from transcripts.formats.zips import Archive, detect_zip_source, single_document
from transcripts.interchange.imports import (
    ImportResult,
    format_error,
    import_data,
    import_trees,
    parse_document,
)
from transcripts.interchange.limits import check_document_size, json_limits, zip_limits
from transcripts.models import Project

# Files of a Claude.ai export that hold no conversation, and why they are not imported.
_CLAUDE_EXTRAS = {
    "projects.json": "projects (their knowledge and prompts) are not conversations",
    "users.json": "account details are not imported",
    "memories.json": "Claude's memory is not a conversation",
}


def import_zip(
    fp: BinaryIO,
    fmt: str | None,
    *,
    project: Project,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import an export zip into project; refused whole (4xx) when it is unsafe or unknown."""
    try:
        archive = Archive(fp, zip_limits())
        detected = detect_zip_source(archive)
    except FormatError as exc:
        raise format_error(exc) from None
    if detected is None:
        name = single_document(archive)
        if name is None:
            raise InvalidInput(
                "this zip holds no export that can be imported: expected conversations.json "
                "(or conversations-000.json, …) of a ChatGPT or Claude.ai export, or one JSON file",
                files=sorted(archive.files)[:20],
            )
        check_document_size(archive.files[name].file_size)
        try:
            raw = archive.read(name)
        except FormatError as exc:
            raise format_error(exc) from None
        result = import_data(parse_document(raw), fmt, project=project)
        if progress is not None:
            progress(len(result.thread_ids))
        return result
    if fmt and fmt != detected:
        raise InvalidInput(
            f"this zip is a {FORMATS[detected].label.split(' (')[0]}, not {fmt}",
            field="format",
            detected=detected,
        )
    source = _chatgpt(archive) if detected == "chatgpt" else _claude_ai(archive)
    return import_trees(detected, source, project=project, progress=progress)


def _chatgpt(archive: Archive) -> Callable[[Skips], Iterator[TreeThread]]:
    files = archive.conversation_files()

    def conversations(skips: Skips) -> Iterator[TreeThread]:
        ctx = ExportContext(skips=skips, archive=archive)
        for name in files:
            ctx.source = PurePosixPath(name).name
            with archive.open(name) as stream:
                yield from iter_chatgpt(guarded(stream, json_limits()), context=ctx)
        for member in sorted(set(ctx.textdocs.values()) - ctx.used_textdocs):
            skips.add(member, "canvas document", "no message of the export names it")

    return conversations


def _claude_ai(archive: Archive) -> Callable[[Skips], Iterator[TreeThread]]:
    files = archive.conversation_files()

    def conversations(skips: Skips) -> Iterator[TreeThread]:
        for name in files:
            with archive.open(name) as stream:
                source = PurePosixPath(name).name
                yield from iter_claude_ai(guarded(stream, json_limits()), skips, source)
        for extra, why in _CLAUDE_EXTRAS.items():
            if archive.at_root(extra):
                skips.add(extra, extra.removesuffix(".json"), why)

    return conversations
