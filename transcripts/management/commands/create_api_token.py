"""Create an API token and print it (only the token, so scripts can capture it)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.api.auth import issue_token
from transcripts.models import ApiToken


class Command(BaseCommand):
    help = "Create a bearer token for the ingest API; it is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="what the token is for, e.g. the agent's name")
        parser.add_argument(
            "--scopes",
            default="ingest,read",
            help=f"comma-separated, among {', '.join(ApiToken.SCOPES)} (default: both)",
        )
        parser.add_argument("--user", help="username the token acts for (staff see hidden threads)")

    def handle(self, *args: Any, **options: Any) -> None:
        scopes = [s.strip() for s in options["scopes"].split(",") if s.strip()]
        user = None
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user {options['user']!r}")
        try:
            _, raw = issue_token(name=options["name"], scopes=scopes, user=user)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(raw)
