"""Start the database, migrate, load demo data, ensure an admin login, and serve the app."""

from __future__ import annotations

import errno
import os
import secrets
import signal
import socket
import sys
from pathlib import Path
from types import FrameType

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from config.database import embedded_data_dir
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import ProjectRole
from transcripts.worker.supervisor import WorkerSupervisor


class Command(BaseCommand):
    help = "Serve Transcripts on an ASGI server (uvicorn), ready to use on a fresh machine."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host", default=os.environ.get("HOST") or "127.0.0.1", help="default: $HOST"
        )
        parser.add_argument(
            "--port", type=int, default=int(os.environ.get("PORT") or 8000), help="default: $PORT"
        )
        parser.add_argument("--no-demo", action="store_true", help="do not load the demo data")
        parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
        parser.add_argument(
            "--no-worker", action="store_true", help="do not start a generation worker alongside"
        )

    def handle(
        self,
        *args: str,
        host: str,
        port: int,
        no_demo: bool,
        workers: int,
        no_worker: bool,
        **options: object,
    ) -> None:
        # The port is taken first: a busy one stops serve before migrations and demo data, and
        # "serving on" is only ever printed for a socket this process holds.
        try:
            listener = bind_listener(host, port)
        except PortUnavailable as exc:
            self.stderr.write(str(exc))
            raise SystemExit(1) from None
        call_command("migrate", interactive=False, verbosity=0)
        if not no_demo:
            call_command("load_demo")
        self._ensure_admin()
        import uvicorn

        supervisor = None
        # uvicorn shuts down gracefully on SIGTERM, then raises it again with the handler found
        # before it: this one, so the `finally` below stops the worker (else left running).
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        if not no_worker:
            supervisor = WorkerSupervisor(
                [sys.executable, "manage.py", "worker", "--interval", "0.1", "--no-reload"],
                say=self._say,
            )
            supervisor.start()
        config = uvicorn.Config(
            "config.asgi:application",
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            lifespan="off",
            # Named, not left to "auto" (which falls back silently): asyncio + h11 cost a
            # single-event append twice the server CPU (bench_api.py --ab, docs/scaling.md).
            loop="uvloop",
            http="httptools",
        )
        server = uvicorn.Server(config)
        listener.listen(config.backlog)
        url = f"http://{host}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"Transcripts is serving on {url}"))
        try:
            if config.workers > 1:
                from uvicorn.supervisors import Multiprocess

                Multiprocess(config, sockets=[listener]).run()
            else:
                server.run(sockets=[listener])
        except KeyboardInterrupt:
            pass
        finally:
            listener.close()
            if supervisor is not None:
                supervisor.stop()

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

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
        admin = user_model.objects.create_superuser("admin", "admin@localhost", password)
        # A superuser may do everything anyway; the membership makes the demo project its own,
        # so the switcher, the project page and the audit log show it as the project's admin.
        set_member(project=default_project(), user=admin, role=ProjectRole.ADMIN)
        password_file.parent.mkdir(parents=True, exist_ok=True)
        # Created private (0600) before the password is written; chmod for a file that existed.
        descriptor = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(password + "\n")
        password_file.chmod(0o600)
        self.stdout.write(self.style.WARNING(f"Created admin login: admin / {password}"))
        self.stdout.write(f"(kept in {password_file} for local use)")


class PortUnavailable(Exception):
    """The address serve was asked to listen on cannot be had, and what to do about it."""


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (not listening yet), or PortUnavailable saying why."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family=family)
    # As uvicorn does: a restart may reuse the port while old connections linger in TIME_WAIT
    # (a port another process listens on still refuses the bind).
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortUnavailable(
                f"port {port} is in use: set PORT=... to a free one (`make serve PORT=8001`, "
                f"or `manage.py serve --port 8001`), or stop what listens on {host}:{port}."
            ) from None
        raise PortUnavailable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    listener.set_inheritable(True)
    return listener


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


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
