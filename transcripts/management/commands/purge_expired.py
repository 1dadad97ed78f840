"""Apply every project's retention period: delete threads with no activity for N days."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from transcripts.ledger.retention import purge_expired


class Command(BaseCommand):
    help = (
        "Delete the threads of projects with a retention period that had no activity for that"
        " long (with their runs, events, messages, reports and ratings); each purge is audited."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="only count what would be deleted"
        )

    def handle(self, *args: str, dry_run: bool, **options: object) -> None:
        purges = purge_expired(dry_run=dry_run)
        if not purges:
            self.stdout.write("No project has a retention period: nothing to purge.")
        verb = "would delete" if dry_run else "deleted"
        for purge in purges:
            counts = ", ".join(f"{n} {kind}" for kind, n in purge.deleted.as_dict().items())
            self.stdout.write(
                f"{purge.project.slug}: {verb} {counts}"
                f" (no activity since {purge.cutoff:%Y-%m-%d %H:%M} UTC)."
            )
        self.stdout.write("Done.")
