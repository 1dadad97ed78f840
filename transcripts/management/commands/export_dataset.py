"""Export a project's dataset (preference pairs or chat rows) as JSON Lines."""

from __future__ import annotations

from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts import datasets
from transcripts.datasets.query import BRANCHES, DATED
from transcripts.errors import DomainError
from transcripts.models import Project


class Command(BaseCommand):
    help = (
        "Export a project's dataset as JSON Lines: preferences (a pair per fork point and "
        "rejected answer) or sft (a chat row per path). Hidden threads and redacted messages "
        "never enter it; see docs/datasets.md."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind", choices=datasets.KINDS)
        parser.add_argument(
            "--format",
            default="",
            help="preferences: trl (default) or openai; sft: openai (default) or hf",
        )
        parser.add_argument("--project", required=True, help="the project's slug")
        parser.add_argument("--since", default="", help="threads dated on or after YYYY-MM-DD")
        parser.add_argument("--until", default="", help="threads dated on or before YYYY-MM-DD")
        parser.add_argument("--dated", choices=DATED, default="updated")
        parser.add_argument("--model", default="", help="threads with a run of such a model")
        parser.add_argument("--agent", default="", help="threads with such an agent")
        parser.add_argument(
            "--rated", action="store_true", help="only rows a preferred mark decides"
        )
        parser.add_argument("--search", default="", help="full-text search over the threads")
        parser.add_argument("--branches", choices=BRANCHES, default="active")
        metadata = parser.add_mutually_exclusive_group()
        metadata.add_argument(
            "--with-metadata",
            dest="metadata",
            action="store_const",
            const="true",
            default="",
            help="add metadata to each row (the default, except for the openai formats)",
        )
        metadata.add_argument(
            "--without-metadata", dest="metadata", action="store_const", const="false"
        )
        parser.add_argument("-o", "--output", help="write to this file instead of stdout")

    def handle(
        self,
        *args: str,
        kind: str,
        project: str,
        rated: bool,
        search: str,
        output: str | None,
        **options: str,
    ) -> None:
        """options: the query's text fields (format, since, until, dated, model, agent,
        branches, metadata), passed on by their names."""
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"no project {project!r}")
        fields = ("format", "since", "until", "dated", "model", "agent", "branches", "metadata")
        try:
            query = datasets.parse_query(
                kind,
                {
                    **{field: options[field] for field in fields},
                    "rated": "true" if rated else "",
                    "q": search,
                },
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        if not output:
            self._write(found, query, lambda line: self.stdout.write(line, ending=""))
            return
        try:
            with open(output, "w", encoding="utf-8") as out:
                count = self._write(found, query, out.write)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror}") from None
        self.stderr.write(f"Wrote {count} row{'s' if count != 1 else ''} to {output}")

    def _write(
        self, project: Project, query: datasets.DatasetQuery, write: Callable[[str], object]
    ) -> int:
        """Write the lines as they come; how many."""
        count = 0
        for line in datasets.jsonl_lines(project, query):
            write(line)
            count += 1
        return count
