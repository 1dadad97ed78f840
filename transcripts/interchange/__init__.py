"""Import and export of whole threads: the database side of transcripts.formats.

A facade over `export.py` (a thread in any format), `export_stream.py` (the same, written
as it is read), `imports.py` (documents into threads,
through the ledger, with a report), `archives.py` (export zips), `files.py` (a file of any
kind), `tasks.py` (large imports queued for a worker), `jobs.py` (the worker's side) and
`limits.py` (the limits every import keeps).
"""

from __future__ import annotations

from transcripts.interchange.export import (
    EXPORT_FORMATS,
    ExportFile,
    chunks,
    export_thread,
    thread_tree,
)
from transcripts.interchange.export_stream import ExportStream, chunked, stream_thread
from transcripts.interchange.files import import_stream
from transcripts.interchange.imports import (
    IMPORT_FORMATS,
    ImportResult,
    import_data,
    import_report,
    iter_threads,
    parse_document,
    resolve_format,
)
from transcripts.interchange.jobs import run_import_job
from transcripts.interchange.tasks import queue_import

__all__ = [
    "EXPORT_FORMATS",
    "IMPORT_FORMATS",
    "ExportFile",
    "ExportStream",
    "ImportResult",
    "chunked",
    "chunks",
    "export_thread",
    "import_data",
    "import_report",
    "import_stream",
    "iter_threads",
    "parse_document",
    "queue_import",
    "resolve_format",
    "run_import_job",
    "stream_thread",
    "thread_tree",
]
