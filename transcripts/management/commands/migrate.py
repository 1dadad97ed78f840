"""Django's `migrate`, with an empty database built from a cached snapshot when one fits.

Everything else is Django's command, unchanged; transcripts/management/schema_cache.py says
when the snapshot is used and how it is checked.
"""

from __future__ import annotations

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import connections

from transcripts.management import schema_cache


class Command(DjangoMigrate):
    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[options["database"]]
        whole = not any(
            options.get(name)
            for name in (
                "app_label",
                "migration_name",
                "fake",
                "fake_initial",
                "plan",
                "check_unapplied",
                "prune",
            )
        )
        key = None
        if whole and schema_cache.enabled() and schema_cache.is_empty(connection):
            key = schema_cache.snapshot_key(connection)
            if schema_cache.restore(connection, key, say=self._warn):
                if options["verbosity"] >= 1:
                    path = schema_cache.snapshot_path(key)
                    self.stdout.write(f"Applied the cached schema snapshot {path}")
                key = None
        if key is None:
            super().handle(*args, **options)
            return
        with schema_cache.recording(connection) as statements:
            super().handle(*args, **options)
        saved = schema_cache.keep(connection, key, statements, say=self._warn)
        if saved is not None and options["verbosity"] >= 1:
            self.stdout.write(f"Cached the migrated schema in {saved}")

    def _warn(self, message: str) -> None:
        self.stderr.write(message)
