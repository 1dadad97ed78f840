"""Make a user a member of a project with a role (or change their role)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.ledger.projects import get_project, set_member
from transcripts.models import ProjectRole


class Command(BaseCommand):
    help = "Add a user to a project with a role, or change the role they have there."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the project")
        parser.add_argument("username", help="the user")
        parser.add_argument("--role", required=True, choices=ProjectRole.values)

    def handle(self, *args: str, slug: str, username: str, role: str, **options: object) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        try:
            project = get_project(slug)
            set_member(project=project, user=user, role=role)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"{user.get_username()} is {role} of {project.slug}.")
