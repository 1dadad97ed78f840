"""Import transcripts from a file in any supported format."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.interchange import IMPORT_FORMATS, import_stream
from transcripts.interchange.imports import ImportReport
from transcripts.ledger.default_project import default_project


class Command(BaseCommand):
    help = "Import transcripts (every thread and branch in FILE) into the database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the file to import (- for standard input)")
        parser.add_argument(
            "--format", choices=IMPORT_FORMATS, help="the file's format (detected when omitted)"
        )

    def handle(self, *args: str, file: str, format: str | None, **options: object) -> None:
        path = file
        started = time.monotonic()
        try:
            total = Path(path).stat().st_size if path != "-" else 0
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        if path != "-" and not Path(path).is_file():
            raise CommandError(f"cannot read {path}: not a file")

        def progress(count: int) -> None:
            if not self.stderr.isatty():
                return
            done = handle.tell() if path != "-" else 0
            width = 30
            filled = int(width * done / total) if total else 0
            bar = "#" * filled + "." * (width - filled)
            rate = count / max(time.monotonic() - started, 1e-6)
            self.stderr.write(f"\r[{bar}] {count} threads, {rate:.0f}/s", ending="")

        try:
            handle = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            result = import_stream(handle, format, progress=progress, project=default_project())
        except DomainError as exc:
            problems = exc.details.get("problems") or []
            lines = [f"  {p['path']}: {p['message']}" for p in problems[:20]]
            raise CommandError("\n".join([f"nothing imported: {exc.message}", *lines])) from None
        finally:
            if path != "-":
                handle.close()
        if self.stderr.isatty():
            self.stderr.write("")
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"Imported {len(result.thread_ids)} thread(s) as {result.format} in {elapsed:.1f}s"
        )
        for thread_id in result.thread_ids[:50]:
            self.stdout.write(f"  {thread_id}")
        self._write_report(result.report)

    def _write_report(self, report: ImportReport) -> None:
        """The import report: what was created, and each skipped item with why."""
        if not report:
            return
        self.stdout.write(
            f"{report.get('messages', 0)} message(s), {report.get('branches', 0)} branch(es), "
            f"{report.get('filesInlined', 0)} file(s) from the archive, "
            f"{report.get('labelled', 0)} item(s) kept as labels, "
            f"{report.get('skippedTotal', 0)} skipped"
        )
        for item in report.get("skipped", [])[:50]:
            self.stdout.write(f"  skipped {item['where']}: {item['what']} ({item['why']})")
