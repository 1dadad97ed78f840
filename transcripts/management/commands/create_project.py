"""Create a project (a team's space: its threads, members and tokens)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.ledger.projects import create_project


class Command(BaseCommand):
    help = "Create a project; members are added with add_member, tokens with create_api_token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="short name used in commands, e.g. support-bot")
        parser.add_argument("--name", default="", help="display name (default: the slug)")
        parser.add_argument(
            "--retention-days",
            type=int,
            default=None,
            help="delete threads with no activity for this many days (default: keep forever)",
        )

    def handle(
        self, *args: str, slug: str, name: str, retention_days: int | None, **options: object
    ) -> None:
        try:
            project = create_project(slug=slug, name=name, retention_days=retention_days)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Created project {project.slug} ({project.name}).")
