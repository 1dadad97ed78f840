"""Create an API token of a project and print it (on the last line, so scripts can capture it)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import get_project
from transcripts.ledger.tokens import issue_token
from transcripts.models import DEFAULT_PROJECT_SLUG, ApiToken


class Command(BaseCommand):
    help = "Create a bearer token of one project for the API; it is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="what the token is for, e.g. the agent's name")
        parser.add_argument(
            "--project",
            default=DEFAULT_PROJECT_SLUG,
            help="slug of the project the token belongs to (default: default)",
        )
        parser.add_argument(
            "--scopes",
            default="ingest,read",
            help=f"comma-separated, among {', '.join(ApiToken.SCOPES)} (default: ingest,read)",
        )
        parser.add_argument("--user", help="username of the person the token is for (optional)")

    def handle(
        self,
        *args: str,
        name: str,
        project: str,
        scopes: str,
        user: str | None,
        **options: object,
    ) -> None:
        scope_list = [s.strip() for s in scopes.split(",") if s.strip()]
        owner = None
        if user:
            owner = get_user_model().objects.filter(username=user).first()
            if owner is None:
                raise CommandError(f"no user {user!r}")
        try:
            chosen = default_project() if project == DEFAULT_PROJECT_SLUG else get_project(project)
            _, raw = issue_token(name=name, scopes=scope_list, project=chosen, user=owner)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(raw)
