"""Load the demo threads (once)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from transcripts.demo import load_demo


class Command(BaseCommand):
    help = "Create a few realistic demo threads through the ledger, unless they exist."

    def handle(self, *args: str, **options: object) -> None:
        created = load_demo()
        self.stdout.write("Demo data loaded." if created else "Demo data already present.")
