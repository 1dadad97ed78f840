"""Shared set-up for benchmark scripts: Django on a throwaway embedded PostgreSQL."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(*, durable: bool = False) -> None:
    """Point Django at DATABASE_URL or a fresh embedded cluster, migrate, and set it up;
    durable: with the throwaway cluster's crash safety back on (fsync, full-page writes,
    synchronous commit), as in production - every benchmark of a write path asks for it."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only")
    # Production settings over plain HTTP: the benchmarks' clients do not speak TLS, and with
    # the HTTPS default every page would answer a 301 redirect instead of itself.
    os.environ.setdefault("TRANSCRIPTS_HTTPS", "0")
    throwaway = not os.environ.get("DATABASE_URL")
    if throwaway:
        from config.database import throwaway_database_url

        os.environ["DATABASE_URL"] = throwaway_database_url()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    if durable and throwaway:
        make_durable()


def make_durable() -> None:
    """Turn the throwaway cluster's crash safety back on (it starts without, for the tests), so
    each commit waits for its WAL to reach the disk, as in production."""
    import time

    from django.db import connection

    with connection.cursor() as cursor:
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            cursor.execute(f"ALTER SYSTEM SET {setting} = on")
        cursor.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)  # the reload is a signal: let the server read it before measuring
        cursor.execute("SHOW fsync")
        fsync = cursor.fetchone()[0]
        cursor.execute("SHOW synchronous_commit")
        print(f"durable: fsync {fsync}, synchronous_commit {cursor.fetchone()[0]}", flush=True)
