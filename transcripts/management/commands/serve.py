"""Start the database, migrate, load demo data, ensure an admin login, and serve the app."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from config.database import embedded_data_dir


class Command(BaseCommand):
    help = "Serve Transcripts on an ASGI server (uvicorn), ready to use on a fresh machine."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo data")
        parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
        parser.add_argument(
            "--no-worker", action="store_true", help="do not start a generation worker alongside"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        if not options["no_demo"]:
            call_command("load_demo")
        self._ensure_admin()
        import uvicorn

        worker = None
        if not options["no_worker"]:
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "worker", "--interval", "0.1", "--no-reload"],
                cwd=settings.BASE_DIR,
            )
            self.stdout.write("Started a generation worker (manage.py worker).")
        url = f"http://{options['host']}:{options['port']}/"
        self.stdout.write(self.style.SUCCESS(f"Transcripts is serving on {url}"))
        try:
            uvicorn.run(
                "config.asgi:application",
                host=options["host"],
                port=options["port"],
                workers=options["workers"],
                log_level="info",
                lifespan="off",
            )
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=10)

    def _ensure_admin(self) -> None:
        user_model = get_user_model()
        password_file = admin_password_file()
        if user_model.objects.filter(is_superuser=True).exists():
            admin = user_model.objects.filter(username="admin", is_superuser=True).first()
            stored = password_file.read_text().strip() if password_file.exists() else ""
            if admin is not None and stored and admin.check_password(stored):
                self.stdout.write(f"Admin login: admin / {stored}")
            else:
                # Never print a password that does not open this database.
                self.stdout.write(
                    "An admin login exists (its password is not in "
                    f"{password_file}); `python manage.py changepassword admin` sets one."
                )
            return
        password = secrets.token_urlsafe(12)
        user_model.objects.create_superuser("admin", "admin@localhost", password)
        password_file.parent.mkdir(parents=True, exist_ok=True)
        # Created private (0600) before the password is written; chmod for a file that existed.
        descriptor = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(password + "\n")
        password_file.chmod(0o600)
        self.stdout.write(self.style.WARNING(f"Created admin login: admin / {password}"))
        self.stdout.write(f"(kept in {password_file} for local use)")


def admin_password_file() -> Path:
    """Where serve keeps the local admin password, one file per embedded database.

    `.data/admin-password.txt` for the default database (and with DATABASE_URL); beside the
    data directory (`<dir>.admin-password.txt`) when TRANSCRIPTS_PGDATA names another one.
    """
    custom = os.environ.get("TRANSCRIPTS_PGDATA", "").strip()
    if custom and not os.environ.get("DATABASE_URL", "").strip():
        data_dir = embedded_data_dir(Path(settings.BASE_DIR))
        return data_dir.with_name(data_dir.name + ".admin-password.txt")
    return Path(settings.BASE_DIR) / ".data" / "admin-password.txt"
