"""Import a file, whatever it holds: an export zip (`archives.py`), a ChatGPT or Claude.ai
export read one conversation at a time, or a document (`imports.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import BinaryIO

from transcripts.errors import InvalidInput
from transcripts.formats import Skips, TreeThread, iter_chatgpt
from transcripts.formats.claude_ai import iter_claude_ai
from transcripts.formats.sources import guarded
from transcripts.formats.zips import is_zip
from transcripts.interchange.archives import import_zip
from transcripts.interchange.imports import (
    ImportResult,
    import_data,
    import_trees,
    parse_document,
)
from transcripts.interchange.limits import check_document_size, json_limits
from transcripts.models import Project

# Formats whose files are read one conversation at a time.
_STREAMED: dict[str, Callable[[BinaryIO, Skips], Iterable[TreeThread]]] = {
    "chatgpt": iter_chatgpt,
    "claude-ai": iter_claude_ai,
}


def import_stream(
    fp: BinaryIO,
    fmt: str | None = None,
    *,
    project: Project,
    progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import a file into project: an export zip (ChatGPT, Claude.ai, or one zipped JSON
    file), a ChatGPT conversations.json read one conversation at a time, or a document."""
    head = fp.read(65536)
    fp.seek(0)
    if not head.strip(b" \t\r\n\xef\xbb\xbf"):
        raise InvalidInput("the file is empty")
    if is_zip(head):
        return import_zip(fp, fmt, project=project, progress=progress)
    if fmt is None and b'"chat_messages"' in head:
        fmt = "claude-ai"
    elif fmt is None and b'"mapping"' in head:
        fmt = "chatgpt"
    # The exports of these two can be hundreds of MB: read one conversation at a time.
    reader = _STREAMED.get(fmt or "")
    if fmt is not None and reader is not None:

        def conversations(skips: Skips) -> Iterable[TreeThread]:
            fp.seek(0)
            return reader(guarded(fp, json_limits()), skips)

        return import_trees(fmt, conversations, project=project, progress=progress)
    fp.seek(0, 2)
    check_document_size(fp.tell())
    fp.seek(0)
    result = import_data(parse_document(fp.read()), fmt, project=project)
    if progress is not None:
        progress(len(result.thread_ids))
    return result
