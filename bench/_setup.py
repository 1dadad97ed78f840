"""Shared set-up for benchmark scripts: Django on a throwaway embedded PostgreSQL."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django() -> None:
    """Point Django at DATABASE_URL or a fresh embedded cluster, migrate, and set it up."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "0")
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only")
    # Production settings over plain HTTP: the benchmarks' clients do not speak TLS, and with
    # the HTTPS default every page would answer a 301 redirect instead of itself.
    os.environ.setdefault("TRANSCRIPTS_HTTPS", "0")
    if not os.environ.get("DATABASE_URL"):
        from config.database import throwaway_database_url

        os.environ["DATABASE_URL"] = throwaway_database_url()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
