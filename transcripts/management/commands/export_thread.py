"""Export one thread in a given format."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.ids import is_ulid
from transcripts.interchange import EXPORT_FORMATS, export_thread
from transcripts.models import Thread


class Command(BaseCommand):
    help = "Export a thread (canonical: every branch; other formats: the active path or --leaf)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("thread_id")
        parser.add_argument("--format", choices=EXPORT_FORMATS, default="canonical")
        parser.add_argument("--leaf", help="export the path to this message instead")
        parser.add_argument("--events", action="store_true", help="canonical: include events")
        parser.add_argument(
            "--branches",
            choices=["active", "all"],
            help="threadprotocol: all adds a child thread per other branch (JSON Lines)",
        )
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(
        self,
        *args: str,
        thread_id: str,
        format: str,
        leaf: str | None,
        events: bool,
        branches: str | None,
        output: str | None,
        **options: object,
    ) -> None:
        thread = Thread.objects.filter(pk=thread_id).first() if is_ulid(thread_id) else None
        if thread is None:
            raise CommandError(f"no thread {thread_id!r}")
        try:
            exported = export_thread(
                thread, format, leaf=leaf, with_events=events, branches=branches
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        if output:
            try:
                Path(output).write_text(exported.content, encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"cannot write {output}: {exc.strerror}") from None
            self.stderr.write(f"Wrote {output}")
        else:
            self.stdout.write(exported.content)
